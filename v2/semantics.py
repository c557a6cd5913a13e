"""Ray Train V2 semantics: only rank 0's checkpoint-attached metrics persist."""

from __future__ import annotations

from collections.abc import Sequence

from compat._model import Outcome, ReportRound, after_report_calls, kept_checkpoints
from v1.semantics import logged_rows


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
