"""What each semantics keeps, writes, merges and returns, as pure functions of the rounds.

V1: every rank-0 report is kept and logged. V2: only rank 0's checkpoint-attached metrics
persist. Whichever Ray engine ran the rounds, these say what a user observes (no cluster needed).
"""

from __future__ import annotations

from collections.abc import Sequence

from compat_core.semantics.rounds import (
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


class V2Semantics:
    name = "v2"

    def outcome(self, rounds: Sequence[ReportRound], *, keep_v1_logs: bool = False) -> Outcome:
        checkpoints = kept_checkpoints(rounds)
        rows = tuple(c.metrics for c in checkpoints)
        return Outcome(
            backend=self.name,
            result_metrics=rows[-1] if rows else None,
            checkpoints=checkpoints,
            dataframe_rows=(logged_rows(rounds) or None) if keep_v1_logs else (rows or None),
            logged_rows=logged_rows(rounds) if keep_v1_logs else (),
            after_report_calls=after_report_calls(rounds),
        )
