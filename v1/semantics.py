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
    """One row per round (rank 0), as in progress.csv/result.json, validation merged."""
    return tuple(merge_validation(r.rank0_metrics, r.validation) for r in rounds)


class V1Semantics:
    name = "v1"

    def outcome(self, rounds: Sequence[ReportRound], *, keep_v1_logs: bool = False) -> Outcome:
        rows = logged_rows(rounds)
        return Outcome(
            backend=self.name,
            result_metrics=rows[-1] if rows else None,
            checkpoints=kept_checkpoints(rounds),
            dataframe_rows=rows if rows else None,
            logged_rows=rows,
            after_report_calls=after_report_calls(rounds),
        )
