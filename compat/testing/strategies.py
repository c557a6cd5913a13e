"""Hypothesis strategies for report schedules: per round and per worker, a metrics dict
(realistic keys and values, NaN included, keys missing or appearing late), a checkpoint or
not, and a validation outcome or not."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from compat.testing.schedule import Schedule, ScheduledReport, ScheduledRound, ScheduledValidation
from compat_core.semantics.rounds import CheckpointStatus

METRIC_KEYS = ("loss", "val_loss", "accuracy", "lr", "epoch", "step", "grad_norm", "throughput")
VALIDATION_KEYS = ("loss", "val_loss", "accuracy", "score")


def metric_values(*, allow_nan: bool = True) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.floats(allow_nan=allow_nan, allow_infinity=False, width=64),
        st.integers(min_value=-(2**31), max_value=2**31),
    )


def metrics(
    keys: tuple[str, ...] = METRIC_KEYS, *, allow_nan: bool = True, max_size: int = 4
) -> st.SearchStrategy[dict[str, Any]]:
    """A metrics dict; across rounds keys come and go, so some appear late or go missing."""
    return st.dictionaries(st.sampled_from(keys), metric_values(allow_nan=allow_nan), max_size=max_size)


def validations(*, allow_nan: bool = True, allow_timeouts: bool = True) -> st.SearchStrategy[ScheduledValidation]:
    statuses = [CheckpointStatus.VALIDATED.value, CheckpointStatus.VALIDATION_FAILED.value]
    if allow_timeouts:
        statuses.append(CheckpointStatus.VALIDATION_TIMEOUT.value)
    return st.builds(
        ScheduledValidation,
        status=st.sampled_from(statuses),
        metrics=metrics(VALIDATION_KEYS, allow_nan=allow_nan, max_size=3),
    )


@st.composite
def report_rounds(
    draw: st.DrawFn, num_workers: int, *, allow_nan: bool = True, validation: bool = True, allow_timeouts: bool = True
) -> ScheduledRound:
    pattern = draw(st.sampled_from(["none", "rank0", "all", "some"]))
    if pattern == "some":
        flags = draw(st.lists(st.booleans(), min_size=num_workers, max_size=num_workers))
    else:
        flags = [pattern == "all" or (pattern == "rank0" and rank == 0) for rank in range(num_workers)]
    reports = tuple(ScheduledReport(draw(metrics(allow_nan=allow_nan)), flag) for flag in flags)
    wants = validation and any(flags) and draw(st.booleans())
    outcome = draw(validations(allow_nan=allow_nan, allow_timeouts=allow_timeouts)) if wants else None
    return ScheduledRound(reports, outcome)


@st.composite
def report_schedules(
    draw: st.DrawFn,
    *,
    max_workers: int = 3,
    max_rounds: int = 6,
    allow_nan: bool = True,
    validation: bool = True,
    allow_timeouts: bool = True,
) -> Schedule:
    """Schedules for 1..max_workers workers and 0..max_rounds rounds.

    For real-Ray runs use ``allow_timeouts=False`` (a timeout needs a validation that
    outlives its limit) and small sizes.
    """
    num_workers = draw(st.integers(min_value=1, max_value=max_workers))
    rounds = draw(
        st.lists(
            report_rounds(num_workers, allow_nan=allow_nan, validation=validation, allow_timeouts=allow_timeouts),
            max_size=max_rounds,
        )
    )
    return Schedule(num_workers, tuple(rounds))
