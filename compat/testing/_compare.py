"""Observing a run as an ``Outcome`` and comparing two outcomes against the documented
V1/V2 differences."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compat_core.files.storage import checkpoint_dir_name
from compat_core.semantics import v1_logs
from compat_core.semantics.result import Result
from compat_core.semantics.rounds import KeptCheckpoint, Metrics, Outcome
from compat_core.semantics.v1_logs import AUTO_KEYS

DOCS = "docs/compatibility.md"


def user_keys(metrics: Mapping[str, Any] | None) -> Metrics | None:
    """Metrics without V1's auto-filled keys, flattened ``config/...`` columns and NaN holes."""
    if metrics is None:
        return None
    return {
        k: v for k, v in metrics.items() if k not in AUTO_KEYS and not k.startswith("config/") and not _is_missing(v)
    }


def _is_missing(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN and a missing key equals a NaN (DataFrames fill holes)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = {k for k, v in a.items() if not _is_missing(v)} | {k for k, v in b.items() if not _is_missing(v)}
        return all(same(a.get(k, math.nan), b.get(k, math.nan)) for k in keys)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, KeptCheckpoint) and isinstance(b, KeptCheckpoint):
        return a.round_index == b.round_index and a.status == b.status and same(a.metrics, b.metrics)
    if _is_missing(a) or _is_missing(b):
        return _is_missing(a) and _is_missing(b)
    return bool(a == b)


def observe(result: Result, after_report_log: str | None = None) -> Outcome:
    """What a user observed in a real run, in the semantics' terms (user keys only)."""
    rounds = result.report_rounds
    # Matched by directory: with checkpoint_score_attribute Ray orders checkpoints by score.
    by_dir = {checkpoint_dir_name(c.checkpoint): c for c in result.reported_checkpoints}
    kept = tuple(
        KeptCheckpoint(round_.index, user_keys(c.metrics) or {}, c.status)
        for round_ in rounds
        if round_.has_checkpoint and (c := by_dir.get(round_.checkpoint_dir_name or "")) is not None
    )
    frame = result.metrics_dataframe
    rows = None if frame is None else tuple(user_keys(r) or {} for r in frame.to_dict("records"))
    logged = tuple(user_keys(r) or {} for r in v1_logs.read_result_json(result.path)) if result.path else ()
    calls: tuple[tuple[tuple[Metrics, ...], bool], ...] = ()
    if after_report_log is not None and os.path.exists(after_report_log):
        with open(after_report_log) as f:
            entries = [json.loads(line) for line in f]
        calls = tuple((tuple(e["metrics"]), e["checkpoint"]) for e in entries)
    return Outcome(
        backend=result.backend,
        result_metrics=user_keys(result.metrics),
        checkpoints=kept,
        dataframe_rows=rows,
        logged_rows=logged,
        after_report_calls=calls,
    )


@dataclass(frozen=True)
class Difference:
    """One way two outcomes differ, and the documented V1/V2 difference behind it (if any)."""

    aspect: str
    v1: Any
    v2: Any
    explanation: str | None

    def __str__(self) -> str:
        why = self.explanation or "NOT explained by any documented V1/V2 difference"
        return f"{self.aspect}: {why}\n    v1: {_short(self.v1)}\n    v2: {_short(self.v2)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:297] + "..."


SHARED = ("checkpoints", "after_report_calls")


def differences(v1: Outcome, v2: Outcome) -> list[Difference]:
    """Every aspect in which the outcomes differ, each with its explanation or None."""
    found = []
    if not same(list(v1.checkpoints), list(v2.checkpoints)):
        found.append(Difference("checkpoints", v1.checkpoints, v2.checkpoints, None))
    if v1.after_report_calls and v2.after_report_calls and not same(v1.after_report_calls, v2.after_report_calls):
        found.append(Difference("after_report_calls", v1.after_report_calls, v2.after_report_calls, None))
    last_checkpoint = v2.checkpoints[-1].metrics if v2.checkpoints else None
    if not same(v1.result_metrics, v2.result_metrics):
        last_report = v1.dataframe_rows[-1] if v1.dataframe_rows else {}
        explained = same(v1.result_metrics, last_report) and same(v2.result_metrics, last_checkpoint)
        found.append(
            Difference(
                "result.metrics", v1.result_metrics, v2.result_metrics,
                f"{DOCS} §3: V1 returns the last report, V2 the latest checkpoint's metrics" if explained else None,
            )
        )  # fmt: skip
    if not same(v1.dataframe_rows, v2.dataframe_rows):
        explained = same(_checkpoint_rows(v1), list(v2.dataframe_rows or []))
        found.append(
            Difference(
                "metrics_dataframe", v1.dataframe_rows, v2.dataframe_rows,
                f"{DOCS} §4: V1 has a row per report, V2 a row per checkpoint" if explained else None,
            )
        )  # fmt: skip
    if not same(v1.logged_rows, v2.logged_rows):
        explained = not v2.logged_rows
        found.append(
            Difference(
                "progress.csv/result.json", len(v1.logged_rows), len(v2.logged_rows),
                f"{DOCS} §5: V2 writes no V1 logs (RunConfig(keep_v1_logs=True) does)" if explained else None,
            )
        )  # fmt: skip
    return found


def _checkpoint_rows(v1: Outcome) -> list[Metrics]:
    """V1's dataframe restricted to checkpoint rounds: what V2's dataframe should equal."""
    rows = list(v1.dataframe_rows or [])
    return [rows[c.round_index] for c in v1.checkpoints if c.round_index < len(rows)]
