"""compat.testing without Ray: comparisons, explanations, schedules."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings

from compat.testing import Schedule, assert_equivalent, same
from compat.testing.strategies import report_schedules
from compat_core.semantics.observed import V1Semantics, V2Semantics
from compat_core.semantics.rounds import KeptCheckpoint


@settings(max_examples=200, deadline=None)
@given(report_schedules())
def test_schedules_round_trip_through_json(schedule) -> None:
    back = Schedule.from_json(schedule.to_json())
    assert back.num_workers == schedule.num_workers
    assert same([r.per_worker_metrics for r in back.to_rounds()], [r.per_worker_metrics for r in schedule.to_rounds()])


def test_same_treats_nan_as_nan_and_missing() -> None:
    assert same({"a": math.nan}, {"a": math.nan}) and same({"a": math.nan}, {})
    assert not same({"a": 1.0}, {"a": math.nan}) and not same({"a": 1}, {})


def outcomes(schedule: Schedule):
    rounds = schedule.to_rounds()
    return V1Semantics().outcome(rounds), V2Semantics().outcome(rounds)


def test_documented_differences_are_returned_with_their_section() -> None:
    from compat.testing.schedule import ScheduledReport, ScheduledRound

    schedule = Schedule(1, (ScheduledRound((ScheduledReport({"loss": 1.0}, True),)),
                            ScheduledRound((ScheduledReport({"loss": 0.5}, False),))))  # fmt: skip
    found = {d.aspect: d for d in assert_equivalent(outcomes(schedule))}
    assert set(found) == {"result.metrics", "metrics_dataframe", "progress.csv/result.json"}
    assert "§3" in found["result.metrics"].explanation and "§4" in found["metrics_dataframe"].explanation


def test_an_unexplained_difference_fails_with_a_readable_message() -> None:
    from compat.testing.schedule import ScheduledReport, ScheduledRound

    v1, v2 = outcomes(Schedule(1, (ScheduledRound((ScheduledReport({"loss": 1.0}, True),)),)))
    tampered = KeptCheckpoint(0, {"loss": -1.0}, v2.checkpoints[0].status)
    v2 = dataclasses.replace(v2, checkpoints=(tampered,))
    with pytest.raises(AssertionError, match="checkpoints: NOT explained by any documented V1/V2 difference"):
        assert_equivalent((v1, v2))
