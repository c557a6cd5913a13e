"""V1-only behaviours: warn (under v2), fail (strict mode), and count them (both modes).

A run's :class:`UsageLog` answers "what will change when we flip?": which V1-only
behaviours the code relied on, how often, and where each was first used.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from compat import _messages, _switch

STRICT_ENV_VAR = "COMPAT_STRICT"


class CompatDeprecationWarning(DeprecationWarning):
    """Base class of every warning compat emits."""


class V1OnlyWarning(CompatDeprecationWarning):
    """Code relies on a V1-only behaviour that V2 drops or rejects.

    Raised as an exception (not warned) in strict mode.
    """


class NonFiniteMetricWarning(UserWarning):
    """A metric was NaN or infinite. It is recorded as reported (as Ray does)."""


# DeprecationWarning is hidden outside __main__ by default; a migration tool whose
# warnings nobody sees is useless. Users who pass -W options keep full control.
if not sys.warnoptions:
    warnings.filterwarnings("default", category=CompatDeprecationWarning)

_PACKAGE_DIRS = tuple(str(Path(__file__).resolve().parent.parent / name) + os.sep for name in ("compat", "v1", "v2"))


def strict_enabled() -> bool:
    """``COMPAT_STRICT=1`` turns every V1-only warning into an error."""
    return os.environ.get(STRICT_ENV_VAR, "").lower() in ("1", "true")


_TESTING_DIR = str(Path(__file__).resolve().parent / "testing") + os.sep


def _is_library(filename: str) -> bool:
    if filename.startswith(_TESTING_DIR):  # compat.testing replays user schedules: user code
        return False
    return filename.startswith(_PACKAGE_DIRS) or f"{os.sep}ray{os.sep}" in filename or filename == threading.__file__


def user_call_site() -> str:
    """``file:line`` of the first frame outside compat, v1, v2, ray and threading."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_library(filename):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]  # f_back is Optional
    return "<unknown>"


@dataclass
class Usage:
    """How a run relied on one V1-only behaviour."""

    kind: str
    count: int
    first_site: str

    @property
    def advice(self) -> str:
        return _messages.v1_only(self.kind)


@dataclass
class UsageLog:
    """Counts V1-only behaviours; the first call site of each kind is kept."""

    entries: dict[str, Usage] = field(default_factory=dict)

    def add(self, kind: str, site: str, count: int = 1) -> bool:
        """Record ``count`` uses of ``kind``; True when the kind is new to this log."""
        if kind not in _messages.KINDS:
            raise KeyError(f"unknown V1-only kind {kind!r}")
        usage = self.entries.get(kind)
        if usage is None:
            self.entries[kind] = Usage(kind, count, site)
            return True
        usage.count += count
        return False

    def merge(self, usages: Iterable[Usage]) -> None:
        for usage in usages:
            self.add(usage.kind, usage.first_site, usage.count)

    def as_list(self) -> list[Usage]:
        return sorted(self.entries.values(), key=lambda u: u.kind)


# One log per process: what the code did since the last ``take()``.
_process_log = UsageLog()
_warned: set[str] = set()


def relied_on(kind: str, detail: str = "", *, backend: _switch.Backend | None = None) -> None:
    """Record a V1-only behaviour; under v2 warn once per kind, or raise in strict mode."""
    site = user_call_site()
    _process_log.add(kind, site)
    selected = backend if backend is not None else _switch.backend()
    if selected != "v2":
        return
    _warn_once(kind, _messages.v1_only(kind, detail), stacklevel=3)


def dropped_by_v2_engine(kind: str, detail: str = "") -> None:
    """Under v1 on Ray's V2 engine: warn once per option kind that the run ignores it (V2's
    engine has nowhere to apply it); in strict mode, raise."""
    message = _messages.dropped_by_v2_engine(kind, detail)
    _warn_once(f"engine:{kind}:{detail}", message, stacklevel=5)  # the caller of fit()


def _warn_once(key: str, message: str, *, stacklevel: int) -> None:
    """Strict mode: raise ``message``. Otherwise warn once per ``key`` in this process;
    ``stacklevel`` as the caller would pass it to ``warnings.warn``."""
    if strict_enabled():
        raise V1OnlyWarning(message + f" (strict mode: {STRICT_ENV_VAR}=1)")
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, V1OnlyWarning, stacklevel=stacklevel + 1)


def warn_for_workers(usages: Iterable[Usage]) -> None:
    """Repeat on the driver, once per kind, what workers warned about in their own logs."""
    for usage in usages:
        if usage.kind not in _warned:
            _warned.add(usage.kind)
            message = _messages.v1_only(usage.kind, f"first at {usage.first_site}, {usage.count}x")
            warnings.warn(message, V1OnlyWarning, stacklevel=3)


def take() -> list[Usage]:
    """Return and clear what this process recorded."""
    usages = _process_log.as_list()
    _process_log.entries.clear()
    return usages
