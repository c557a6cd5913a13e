"""Report schedules: what each worker reports in each round, as plain JSON-able data.

A schedule can be evaluated by the backends' semantics (:meth:`Schedule.to_rounds`) and
replayed on real Ray by :func:`replay_schedule`, so the two can be compared.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

from compat_core.semantics.rounds import CheckpointStatus, ReportRound, ValidationOutcome, WorkerReport


@dataclass(frozen=True)
class ScheduledValidation:
    """How the validation of a round's checkpoint ends: its status and metrics."""

    status: str  # a CheckpointStatus value: VALIDATED, VALIDATION_FAILED or VALIDATION_TIMEOUT
    metrics: dict[str, Any]


@dataclass(frozen=True)
class ScheduledReport:
    metrics: dict[str, Any]
    checkpoint: bool


@dataclass(frozen=True)
class ScheduledRound:
    reports: tuple[ScheduledReport, ...]
    validation: ScheduledValidation | None = None


@dataclass(frozen=True)
class Schedule:
    """Rounds of reports; ``rounds[i].reports[rank]`` is what worker ``rank`` reports."""

    num_workers: int
    rounds: tuple[ScheduledRound, ...]

    def to_rounds(self) -> list[ReportRound]:
        """The schedule as the semantics see it (validation outcomes attached)."""
        out = []
        for index, round_ in enumerate(self.rounds):
            wants = round_.validation is not None
            reports = tuple(
                WorkerReport(rank, dict(r.metrics), r.checkpoint, wants and r.checkpoint)
                for rank, r in enumerate(round_.reports)
            )
            outcome = None
            if wants and any(r.checkpoint for r in round_.reports):
                assert round_.validation is not None
                status = CheckpointStatus(round_.validation.status)
                metrics = dict(round_.validation.metrics) if status is CheckpointStatus.VALIDATED else {}
                outcome = ValidationOutcome(status, metrics)
            out.append(ReportRound(index, reports, None, outcome))
        return out

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Schedule:
        data = json.loads(text)
        rounds = tuple(
            ScheduledRound(
                tuple(ScheduledReport(r["metrics"], r["checkpoint"]) for r in round_["reports"]),
                ScheduledValidation(**round_["validation"]) if round_["validation"] else None,
            )
            for round_ in data["rounds"]
        )
        return cls(data["num_workers"], rounds)


def replay_schedule(config: dict[str, Any]) -> None:
    """A training function that reports exactly what ``config["schedule"]`` says."""
    import compat

    schedule = Schedule.from_json(config["schedule"])
    rank = compat.get_context().get_world_rank()
    for round_ in schedule.rounds:
        report = round_.reports[rank]
        if not report.checkpoint:
            compat.report(report.metrics)
            continue
        with tempfile.TemporaryDirectory() as directory:
            with open(os.path.join(directory, f"rank_{rank}"), "w") as f:
                f.write(json.dumps(report.metrics))
            checkpoint = compat.Checkpoint.from_directory(directory)
            if round_.validation is None:
                compat.report(report.metrics, checkpoint=checkpoint)
            else:
                compat.report(
                    report.metrics,
                    checkpoint=checkpoint,
                    validate_fn=scheduled_validation,
                    validate_config=asdict(round_.validation),
                )


def scheduled_validation(checkpoint: Any, config: dict[str, Any]) -> dict[str, Any]:
    """Ends as the schedule says: returns its metrics, raises, or outlives a timeout."""
    if config["status"] == CheckpointStatus.VALIDATION_FAILED.value:
        raise RuntimeError("scheduled validation failure")
    if config["status"] == CheckpointStatus.VALIDATION_TIMEOUT.value:
        time.sleep(3600)
    return dict(config["metrics"])
