"""Ray Train V1 semantics: every rank-0 report is kept and logged."""

from __future__ import annotations

from collections.abc import Sequence

from compat._model import (
    Metrics,
    Outcome,
    ReportRound,
    after_report_calls,
    kept_checkpoints,
    merge_validation,
)


def logged_rows(rounds: Sequence[ReportRound]) -> tuple[Metrics, ...]:
    """One row per round (rank 0) as written to progress.csv/result.json at report time."""
    return tuple(dict(r.rank0_metrics) for r in rounds)


def dataframe_rows(rounds: Sequence[ReportRound]) -> tuple[Metrics, ...]:
    """V1's ``metrics_dataframe``: the logged rows, validated metrics merged (compat)."""
    return tuple(merge_validation(r.rank0_metrics, r.validation) for r in rounds)


class V1Semantics:
    name = "v1"

    def outcome(self, rounds: Sequence[ReportRound], *, keep_v1_logs: bool = False) -> Outcome:
        rows = dataframe_rows(rounds)
        return Outcome(
            backend=self.name,
            # With no report V1 still returns its auto-filled keys, and an empty frame.
            result_metrics=rows[-1] if rows else {},
            checkpoints=kept_checkpoints(rounds),
            dataframe_rows=rows,
            logged_rows=logged_rows(rounds),
            after_report_calls=after_report_calls(rounds),
        )
