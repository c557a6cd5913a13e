"""A sample of generated schedules replayed on real Ray in both modes: what users observe
matches the fast semantics the other properties check hundreds of times."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings

from compat.testing import assert_equivalent, run_schedule, same
from compat.testing.schedule import Schedule, ScheduledReport, ScheduledRound, ScheduledValidation
from compat.testing.strategies import report_schedules
from compat_core.semantics.observed import V1Semantics, V2Semantics
from tests.suite import FULL

pytestmark = pytest.mark.ray


def assert_matches(observed, expected) -> None:
    assert same(observed.result_metrics, expected.result_metrics), "result.metrics"
    assert same(list(observed.checkpoints), list(expected.checkpoints)), "checkpoints"
    assert same(list(observed.dataframe_rows or []), list(expected.dataframe_rows or [])), "metrics_dataframe"
    assert same(list(observed.logged_rows), list(expected.logged_rows)), "result.json rows"
    assert same(list(observed.after_report_calls), list(expected.after_report_calls)), "after_report calls"


RICH = Schedule(
    num_workers=2,
    rounds=(
        ScheduledRound((ScheduledReport({"loss": 2.0}, False), ScheduledReport({"loss": 2.5}, False))),
        ScheduledRound(
            (ScheduledReport({"loss": 1.0, "late": 3}, True), ScheduledReport({"loss": math.nan}, True)),
            ScheduledValidation("VALIDATED", {"loss": 0.5, "score": 0.9}),
        ),
        ScheduledRound(
            (ScheduledReport({"loss": 0.5}, True), ScheduledReport({}, False)),
            ScheduledValidation("VALIDATION_FAILED", {"score": 1.0}),
        ),
        ScheduledRound((ScheduledReport({"epoch": 3}, False), ScheduledReport({"epoch": 3}, False))),
    ),
)


# With the v1 backend on Ray's V2 engine (CI's second pass) the rich example only: the generated
# schedules ran in the first pass, and their V2 half would be the same runs again.
ON_V2_ENGINE = os.environ.get("COMPAT_V1_ENGINE") == "v2"


@settings(
    max_examples=3 if FULL else 1,  # and the rich example, explicit
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit,) if ON_V2_ENGINE else tuple(Phase),
)
@example(schedule=RICH)
@given(schedule=report_schedules(max_workers=2, max_rounds=3, allow_timeouts=False))
@pytest.mark.extended_rerun
def test_real_runs_match_the_semantics(ray_cluster, tmp_path_factory, schedule) -> None:
    comparison = run_schedule(schedule, storage_path=str(tmp_path_factory.mktemp("schedule")))
    rounds = schedule.to_rounds()
    assert_matches(comparison.v1, V1Semantics().outcome(rounds))
    assert_matches(comparison.v2, V2Semantics().outcome(rounds))
    assert_equivalent(comparison)
