"""Every environment variable compat reads, in one place: its name, default, type and parser.

Each variable is a :class:`Setting` made with one parser per type (:func:`boolean`,
:func:`whole`, :func:`seconds`, :func:`path`, :func:`choice`, :func:`text`), read at each call
(``setting.get()``: flips between runs work). A value the parser does not accept is an
:class:`~compat_core.errors.InvalidSwitchValueError` (a ``ValueError``) naming the variable,
the value and what it accepts; an unset variable, or one set but empty (``export NAME=``), is
its default. :data:`SETTINGS` lists them all (``docs/environment_variables.md`` is checked
against it), :data:`PROPAGATED` those the driver's value is applied in every worker of a run.

Ray keeps its variables the same way (``ray/train/v2/_internal/constants.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from compat_core import messages

T = TypeVar("T")


@dataclass(frozen=True)
class Parser(Generic[T]):
    """A type of value: what it accepts (said in the error) and how text becomes it (a
    ``ValueError`` for text it does not accept)."""

    accepts: str
    parse: Callable[[str], T]


def boolean(
    accepts: str = "1 or true to turn it on, 0 or false to leave it off (any case)", *, strip: bool = True
) -> Parser[bool]:
    """``1``/``true`` or ``0``/``false``, any case (``strip=False``: no space around it)."""

    def parse(text: str) -> bool:
        value = (text.strip() if strip else text).lower()
        if value in ("1", "true"):
            return True
        if value in ("0", "false"):
            return False
        raise ValueError(text)

    return Parser(accepts, parse)


def whole(minimum: int) -> Parser[int]:
    def parse(text: str) -> int:
        value = int(text.strip())
        if value < minimum:
            raise ValueError(text)
        return value

    return Parser(f"a whole number >= {minimum}", parse)


def seconds() -> Parser[float]:
    def parse(text: str) -> float:
        value = float(text.strip())
        if not value > 0:  # NaN too
            raise ValueError(text)
        return value

    return Parser("a number of seconds > 0", parse)


def path() -> Parser[str]:
    """A directory, made absolute (relative to the working directory when read)."""
    return Parser("a directory", lambda value: os.path.abspath(os.path.expanduser(value.strip())))


def text() -> Parser[str]:
    return Parser("any text", lambda value: value.strip())


def choice(*values: str) -> Parser[str]:
    """One of ``values``, any case."""

    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in values:
            raise ValueError(text)
        return value

    return Parser("one of " + ", ".join(values), parse)


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One environment variable compat reads."""

    name: str
    parser: Parser[Any]  # its values are T's (T also holds the default: None where unset means "none")
    default: T
    # Applied in every worker of a run from the driver's environment at ``fit()``.
    propagated: bool = False
    # The variable's own error text (``messages``), for a variable whose values need more
    # than "it accepts ..." said (which values Ray reads otherwise, what each does).
    explain: Callable[[str, str], str] | None = None
    # An empty value is the default (False: an error, where Ray would read it as something).
    blank_is_unset: bool = True

    def get(self, environ: Mapping[str, str] | None = None) -> T:
        """The value now (``environ``: these variables instead of the process's)."""
        raw = self.raw(environ)
        if raw is None or (self.blank_is_unset and not raw.strip()):
            return self.default
        return self.parse(raw)

    def parse(self, raw: str) -> T:
        """``raw`` as this variable's value, or the error saying what it accepts."""
        try:
            value: T = self.parser.parse(raw)
            return value
        except ValueError:
            pass
        # Imported here: compat's errors subclass Ray's train classes, which a Ray that refuses
        # the switch's value cannot import until compat_core.switch has handed it one it takes.
        from compat_core.errors import InvalidSwitchValueError

        if self.explain is not None:
            raise InvalidSwitchValueError(self.explain(self.name, raw))
        raise InvalidSwitchValueError(messages.invalid_setting(self.name, raw, self.parser.accepts, self.default))

    def raw(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The variable's text as set (None: unset), for handing on to another process as it is."""
        return (os.environ if environ is None else environ).get(self.name)

    def set_raw(self, text: str | None) -> None:
        """Set the variable in this process (None: unset it), for whatever reads it next, Ray's
        processes started from here included: only where compat must change what Ray reads."""
        if text is None:
            os.environ.pop(self.name, None)
        else:
            os.environ[self.name] = text


# --- the variables ---------------------------------------------------------------------------

# Ray's own ``env_bool`` reads ``1``/``true`` (any case) as V2 and every other value as V1; compat
# takes exactly the values Ray gives a meaning to on purpose (no space around them).
V2_ENABLED: Setting[bool | None] = Setting(
    "RAY_TRAIN_V2_ENABLED",
    boolean("1 or true for V2, 0 or false for V1", strip=False),
    None,  # Ray's own default: compat_core.switch
    propagated=True,
    explain=messages.invalid_switch_value,
    blank_is_unset=False,
)
V2_ENABLED_KEPT: Setting[bool | None] = Setting(
    "COMPAT_RAY_TRAIN_V2_ENABLED",
    boolean("1 or true for V2, 0 or false for V1", strip=False),
    None,  # unset: RAY_TRAIN_V2_ENABLED is the selection
    propagated=True,
    explain=messages.invalid_switch_value,
    blank_is_unset=False,
)  # the user's RAY_TRAIN_V2_ENABLED, kept by compat where the installed Ray refuses it (switch)
V1_ENGINE: Setting[str | None] = Setting(
    "COMPAT_V1_ENGINE", choice("v1", "v2"), None, explain=messages.invalid_engine_value
)  # None: V1's engine while the installed Ray has one
STRICT: Setting[bool] = Setting("COMPAT_STRICT", boolean(), False, propagated=True)
V2_RAY_ROUNDS: Setting[bool] = Setting("COMPAT_V2_RAY_ROUNDS", boolean(), False, propagated=True)
VOTE_TIMEOUT_S: Setting[float] = Setting("COMPAT_VOTE_TIMEOUT_S", seconds(), 60.0)
RECORD_CHANNEL: Setting[str] = Setting(
    "COMPAT_RECORD_CHANNEL", choice("socket", "actor"), "socket", explain=messages.invalid_record_channel
)
RECORD_MAX_BYTES: Setting[int] = Setting(
    "COMPAT_RECORD_MAX_BYTES", whole(1), 512 * 1024 * 1024, explain=messages.invalid_record_max_bytes
)
LEDGER_MAX_RESTARTS: Setting[int] = Setting("COMPAT_LEDGER_MAX_RESTARTS", whole(0), 3)
STATE_DIR: Setting[str | None] = Setting("COMPAT_STATE_DIR", path(), None)  # None: <temp dir>/ray-train-compat-<uid>
CAPTURE_DIR: Setting[str | None] = Setting("COMPAT_CAPTURE_DIR", path(), None)
JOB_NAME: Setting[str | None] = Setting("COMPAT_JOB_NAME", text(), None)

SETTINGS: tuple[Setting[Any], ...] = (
    V2_ENABLED,
    V2_ENABLED_KEPT,
    V1_ENGINE,
    STRICT,
    V2_RAY_ROUNDS,
    VOTE_TIMEOUT_S,
    RECORD_CHANNEL,
    RECORD_MAX_BYTES,
    LEDGER_MAX_RESTARTS,
    STATE_DIR,
    CAPTURE_DIR,
    JOB_NAME,
)
"""Every variable compat reads."""

PROPAGATED: tuple[str, ...] = tuple(s.name for s in SETTINGS if s.propagated)
"""The variables whose driver's value is applied in every worker of a run (before the training
function starts), so both sides agree even where the cluster was started with other values."""


def propagated_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The :data:`PROPAGATED` variables set here, as set."""
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in PROPAGATED if name in environ}
