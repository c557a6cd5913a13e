"""Plain data describing a training run as the shim sees it: rounds of reports.

Both backends' semantics are functions from these rounds to what a user observes
(:mod:`compat_core.semantics.observed`); no Ray cluster is needed to evaluate them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compat_core.releases import standins

Metrics = dict[str, Any]


# Ray's ``ReportedCheckpointStatus`` (compat's stand-in before Ray 2.56), for both backends.
CheckpointStatus = standins.ReportedCheckpointStatus


@dataclass(frozen=True)
class ValidationOutcome:
    """What an asynchronous validation produced for one checkpoint."""

    status: CheckpointStatus
    metrics: Metrics = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class WorkerReport:
    """One ``report()`` call of one worker."""

    rank: int
    metrics: Metrics
    has_checkpoint: bool = False
    wants_validation: bool = False


@dataclass(frozen=True)
class ReportRound:
    """The ``index``-th ``report()`` of every worker in one attempt (``report`` is a barrier).

    ``attempt`` counts from 0 and grows each time a failed run is retried
    (``FailureConfig(max_failures=...)``); a retried attempt's indices start again at 0.
    """

    index: int
    reports: tuple[WorkerReport, ...]
    checkpoint_dir_name: str | None = None
    validation: ValidationOutcome | None = None
    attempt: int = 0

    @property
    def rank0_metrics(self) -> Metrics:
        return self.reports[0].metrics

    @property
    def has_checkpoint(self) -> bool:
        """A checkpoint is registered when at least one worker passed one (both modes)."""
        return any(r.has_checkpoint for r in self.reports)

    @property
    def wants_validation(self) -> bool:
        """Validation follows the first worker that passed a checkpoint (Ray's rule)."""
        for report in self.reports:
            if report.has_checkpoint:
                return report.wants_validation
        return False

    @property
    def per_worker_metrics(self) -> list[Metrics]:
        return [r.metrics for r in self.reports]


@dataclass(frozen=True)
class KeptCheckpoint:
    """A registered checkpoint with the metrics attached to it after validation."""

    round_index: int
    metrics: Metrics
    status: CheckpointStatus


@dataclass(frozen=True)
class Outcome:
    """What a user observes after ``fit()``, restricted to user-reported keys."""

    backend: str
    result_metrics: Metrics | None
    checkpoints: tuple[KeptCheckpoint, ...]
    dataframe_rows: tuple[Metrics, ...] | None
    logged_rows: tuple[Metrics, ...]
    after_report_calls: tuple[tuple[tuple[Metrics, ...], bool], ...]


def merge_validation(metrics: Mapping[str, Any], outcome: ValidationOutcome | None) -> Metrics:
    """V2's merge: validated metrics overwrite the same keys; a failure leaves them as-is."""
    merged = dict(metrics)
    if outcome is not None and outcome.status is CheckpointStatus.VALIDATED:
        merged.update(outcome.metrics)
    return merged


def checkpoint_status(round_: ReportRound) -> CheckpointStatus:
    if round_.validation is not None:
        return round_.validation.status
    if round_.wants_validation:
        return CheckpointStatus.PENDING_VALIDATION
    return CheckpointStatus.COMMITTED


def kept_checkpoints(rounds: Sequence[ReportRound]) -> tuple[KeptCheckpoint, ...]:
    """Checkpoints in report order, with rank 0's metrics merged with validation."""
    return tuple(
        KeptCheckpoint(r.index, merge_validation(r.rank0_metrics, r.validation), checkpoint_status(r))
        for r in rounds
        if r.has_checkpoint
    )


@dataclass(frozen=True)
class Retention:
    """``CheckpointConfig``'s retention: how many checkpoints, ranked by which metric."""

    num_to_keep: int | None = None
    score_attribute: str | None = None
    score_order: str = "max"
    # A checkpoint whose metrics lack the score attribute: Ray appends it, ranking it as the
    # newest (from 2.49), or ranks it by a score of -inf (before; ``compat_core.releases``).
    unscored_as_newest: bool = True


def retained(metrics: Sequence[Mapping[str, Any]], retention: Retention) -> list[int]:
    """Positions (in report order) of the checkpoints Ray's checkpoint manager keeps after
    registering these, in order: the ``num_to_keep`` best by score (unscored ones as
    :attr:`Retention.unscored_as_newest` says) and always the latest."""
    if retention.num_to_keep is None:
        return list(range(len(metrics)))
    ranked: list[int] = []  # worst first
    attr, sign = retention.score_attribute, (1.0 if retention.score_order == "max" else -1.0)

    def key(position: int) -> tuple[bool, float]:  # Ray's: NaN < -inf < numbers; missing is -inf
        value = float(metrics[position].get(attr, float("-inf"))) if attr is not None else float("-inf")
        return (not math.isnan(value), sign * value)

    for position, values in enumerate(metrics):
        if attr is not None and (attr in values or not retention.unscored_as_newest):
            at = 0
            while at < len(ranked) and not key(ranked[at]) > key(position):
                at += 1  # equal scores: the later checkpoint ranks higher (Ray's comparison, NaN included)
            ranked.insert(at, position)
        else:
            ranked.append(position)
        # Ray deletes as it registers: later insertions compare against the survivors only.
        worst = set(ranked[: -retention.num_to_keep]) - {position}
        ranked = [p for p in ranked if p not in worst]
    return sorted(ranked)


def after_report_calls(
    rounds: Sequence[ReportRound],
) -> tuple[tuple[tuple[Metrics, ...], bool], ...]:
    """``after_report`` is called once per round with every worker's pre-validation metrics."""
    return tuple((tuple(r.per_worker_metrics), r.has_checkpoint) for r in rounds)


def non_finite_keys(metrics: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The keys whose value is a NaN or infinite number; a nested one as V1's logs flatten it
    (``{"eval": {"loss": nan}}``: ``eval/loss``)."""
    found = []
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            found += non_finite_keys(value, f"{name}/")
        elif isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isfinite(value):
            found.append(name)
    return found
