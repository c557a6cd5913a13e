"""V1-only *reads* of a :class:`~compat_core.semantics.result.Result`: what the user's code takes from a
V1 result that V2 would give otherwise.

A run can rely on V1 without calling anything V1-only: a program that reports a checkpoint every
epoch with ``CheckpointConfig(num_to_keep=2)`` and then analyses ``result.metrics_dataframe``
gets 5 rows under V1 and 2 under V2. Under V1 semantics each result watches its
``metrics_dataframe``: the first read *by the user's code* (not compat's, Ray's or a library's
on compat's behalf) of a frame that V2 would build otherwise is recorded as the V1-only behaviour
``metrics-dataframe``, with what is at stake ("5 rows under V1, 2 under V2 (the kept
checkpoints); nested metrics flattened: eval/acc"), in ``result.v1_usage``, its
``migration_report()`` and the run's readiness record (appended again with the read).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from compat_core.migration.where import is_library
from compat_core.semantics.v1_logs import AUTO_KEYS, flatten

KIND = "metrics-dataframe"


def frame_difference(frame: Any, kept_checkpoints: int, reported_keys: AbstractSet[str]) -> str:
    """What V2's ``metrics_dataframe`` would lack of this V1 frame, in words ("" when only V1's
    auto-filled columns differ): rows beyond the kept checkpoints, nested metrics flattened.

    ``reported_keys``: the top-level keys rank 0 reported (a flattened column is not one)."""
    if frame is None:
        return ""
    flattened = [
        str(c)
        for c in frame.columns
        if "/" in str(c) and str(c) not in reported_keys and not str(c).startswith("config/") and c not in AUTO_KEYS
    ]
    return _difference(len(frame), kept_checkpoints, flattened)


def flip_difference(frame: Any, v1_rows: int, last_metrics: Mapping[str, Any] | None) -> str:
    """The same words for a run under V2 semantics (the flip): what V1's ``metrics_dataframe``
    would have held that this V2 frame (``frame``; None without a kept checkpoint) lacks.
    ``v1_rows``: the run's complete rounds (V1's frame has a row for each of rank 0's reports);
    ``last_metrics``: rank 0's last report, whose nested metrics V1 flattens."""
    nested = {key: value for key, value in (last_metrics or {}).items() if isinstance(value, Mapping)}
    flattened = [key for key in flatten(nested) if "/" in key]
    return _difference(v1_rows, 0 if frame is None else len(frame), flattened)


def _difference(v1_rows: int, v2_rows: int, flattened: list[str]) -> str:
    parts = []
    if v1_rows > v2_rows:
        parts.append(f"{v1_rows} rows under V1, {v2_rows} under V2 (one per kept checkpoint)")
    if flattened:
        roots = sorted({c.split("/", 1)[0] for c in flattened})
        shown = ", ".join(flattened[:4]) + (", ..." if len(flattened) > 4 else "")
        parts.append(f"nested metrics flattened into {shown} (V2: {', '.join(repr(r) for r in roots)} as dicts)")
    return "; ".join(parts)


@dataclass
class ReadWatch:
    """Set on a V1 result by ``fit()``: ``difference`` is :func:`frame_difference` of its frame
    ("" when V2's would hold the same rows and columns); ``recorded`` is called once, with the
    read's site, when the user first reads the frame."""

    difference: str
    recorded: Callable[[str, str], None]
    seen: set[str] = field(default_factory=set)

    def read(self, name: str, site: str) -> None:
        if name in self.seen or not self.difference:
            return
        self.seen.add(name)
        self.recorded(site, self.difference)


KEYS_KIND = "v1-result-keys"


class WatchedMetrics(dict[str, Any]):
    """V1's ``result.metrics``: a dict (equal to, and pickled as, the plain one) whose reads of
    V1's auto-filled keys by the user's code (``metrics["training_iteration"]``,
    ``.get("time_total_s")``) are recorded once each: V2's ``result.metrics`` lacks them.

    ``flipped``: V2's ``result.metrics`` instead, whose reads of those keys it lacks (a
    ``KeyError``, or ``.get``'s default, where V1 would have given the value) are recorded."""

    def __init__(self, metrics: dict[str, Any], recorded: Callable[[str, str], None], *, flipped: bool = False) -> None:
        super().__init__(metrics)
        self._recorded = recorded
        self._seen: set[str] = set()
        self._flipped = flipped

    def __getitem__(self, key: str) -> Any:
        self._note(key, sys._getframe(1))
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._note(key, sys._getframe(1))
        return super().get(key, default)

    def _note(self, key: str, frame: FrameType) -> None:
        if key not in AUTO_KEYS or key in self._seen or (key in self) == self._flipped:
            return
        reader = _reader(frame)
        if reader is not None:
            self._seen.add(key)
            self._recorded(f"{reader.f_code.co_filename}:{reader.f_lineno}", f"result.metrics[{key!r}]")

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)  # a plain dict elsewhere: the watch stays in this process


_STDLIB = sysconfig.get_paths()["stdlib"] + os.sep


def _reader(frame: FrameType | None) -> FrameType | None:
    """The frame that reads, past the machinery between it and the field (a dataclass's
    generated ``__repr__``/``__eq__``, ``copy``, ``pickle``, ``reprlib``): None when that is
    compat's, Ray's or Python's own code."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if is_library(filename):
            return None
        generated = filename == "<string>" and frame.f_code.co_name.startswith("__")
        stdlib = filename.startswith(_STDLIB) and "-packages" not in filename
        if not generated and not stdlib:
            return frame
        frame = frame.f_back
    return None


class Watched:
    """A dataclass field whose reads by the user's code are reported to the instance's
    ``_reads`` (a :class:`ReadWatch`, or None: not watched). Reads by compat, Ray or the
    dataclass machinery's own callers inside them are not the user's."""

    def __init__(self, default: Any = None) -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, f"_{name}_value"

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self.default  # the dataclass's default for the field
        watch = obj.__dict__.get("_reads")
        if watch is not None:
            reader = _reader(sys._getframe(1))
            if reader is not None:
                watch.read(self.name, f"{reader.f_code.co_filename}:{reader.f_lineno}")
        return obj.__dict__.get(self.slot, self.default)

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value
