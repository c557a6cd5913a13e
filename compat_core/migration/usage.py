"""V1-only behaviours: warn (under v2), fail (strict mode), and count them (both modes).

A run's :class:`UsageLog` answers "what will change when we flip?": which V1-only
behaviours the code relied on, how often, and where each was first used.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ray.util.annotations import RayDeprecationWarning

from compat_core import messages, settings, switch
from compat_core.files import storage
from compat_core.migration import v1_only
from compat_core.migration.where import user_call_site, warn

STRICT_ENV_VAR = settings.STRICT.name


class CompatDeprecationWarning(RayDeprecationWarning):
    """Base class of every warning compat emits: a ``RayDeprecationWarning`` (Ray's class for
    its own deprecations, a ``DeprecationWarning``), so filters and ``pytest.warns`` written
    against Ray's warnings catch compat's too."""


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


def strict_enabled() -> bool:
    """``COMPAT_STRICT=1`` turns every V1-only warning into an error."""
    return settings.STRICT.get()


@dataclass
class Usage:
    """How a run relied on one V1-only behaviour."""

    kind: str
    count: int
    first_site: str
    detail: str = ""  # what is at stake in this run, e.g. "5 rows under V1, 2 under V2"

    @property
    def advice(self) -> str:
        return v1_only.message(self.kind, self.detail)

    @property
    def severity(self) -> str:
        """What it does on raw V2: ``breaks`` (raises) or ``silent`` (other results)."""
        return v1_only.KINDS[self.kind].severity

    @property
    def rule(self) -> str | None:
        """The codemod rule (``python -m migrate``) that flags or rewrites it."""
        return v1_only.KINDS[self.kind].rule


@dataclass
class UsageLog:
    """Counts V1-only behaviours; the first call site of each kind is kept."""

    entries: dict[str, Usage] = field(default_factory=dict)

    def add(self, kind: str, site: str, count: int = 1, detail: str = "") -> bool:
        """Record ``count`` uses of ``kind``; True when the kind is new to this log."""
        if kind not in v1_only.KINDS:
            raise KeyError(f"unknown V1-only kind {kind!r}")
        usage = self.entries.get(kind)
        if usage is None:
            self.entries[kind] = Usage(kind, count, site, detail)
            return True
        usage.count += count
        return False

    def merge(self, usages: Iterable[Usage]) -> None:
        for usage in usages:
            self.add(usage.kind, usage.first_site, usage.count, usage.detail)

    def as_list(self) -> list[Usage]:
        return sorted(self.entries.values(), key=lambda u: u.kind)


# One log per process: what the code did since the last ``take()``.
_process_log = UsageLog()
_warned: set[str] = set()


def relied_on(kind: str, detail: str = "", *, mode: switch.Mode | None = None, site: str | None = None) -> None:
    """Record a V1-only behaviour at ``site`` (the user's line, by default the caller's); under
    v2 warn once per kind, or raise in strict mode."""
    _process_log.add(kind, site or user_call_site())
    if not (mode or switch.mode()).warns_v1_only:
        return
    _warn_once(kind, v1_only.message(kind, detail), site=site)


def dropped_by_v2_engine(kind: str, detail: str = "") -> None:
    """Under v1 on Ray's V2 engine: warn once per option kind that the run ignores it (V2's
    engine has nowhere to apply it); in strict mode, raise."""
    message = v1_only.dropped_by_v2_engine(kind, detail)
    _warn_once(f"engine:{kind}:{detail}", message)  # at the user's line: the call of fit()


def _warn_once(key: str, message: str, site: str | None = None) -> None:
    """Strict mode: raise ``message``. Otherwise warn once per ``key`` in this process, at
    the user's line (``site``, else the first frame outside compat and Ray)."""
    if strict_enabled():
        raise V1OnlyWarning(messages.in_strict_mode(message, STRICT_ENV_VAR))
    if key not in _warned:
        _warned.add(key)
        warn(message, V1OnlyWarning, site=site)


def warn_for_workers(usages: Iterable[Usage]) -> None:
    """Repeat on the driver, once per kind, what workers warned about in their own logs."""
    for usage in usages:
        if usage.kind not in _warned:
            _warned.add(usage.kind)
            message = v1_only.message(usage.kind, f"first at {usage.first_site}, {usage.count}x")
            warn(message, V1OnlyWarning, site=usage.first_site)  # the worker's line that did it


def take() -> list[Usage]:
    """Return and clear what this process recorded."""
    usages = _process_log.as_list()
    _process_log.entries.clear()
    return usages


def note_rerun_same_name(name: str | None, storage_path: str | None, filesystem: Any, mode: switch.Mode) -> None:
    """A named run (``RunConfig``'s ``name``, ``storage_path``, ``storage_filesystem``) whose
    directory already holds an earlier run: V1 (on either engine) starts a fresh trial beside it,
    V2 would resume it. Recorded as the V1-only behaviour ``rerun-same-name``."""
    if name:
        run_dir = storage.resolve(storage_path, filesystem, name)
        if run_dir.has_entries():
            relied_on("rerun-same-name", f"{name!r} in {run_dir}", mode=mode)
