"""Properties of the two backends' semantics over generated report schedules (no Ray)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.callbacks import UserCallback
from compat.testing import assert_equivalent, same
from compat.testing._compare import differences
from compat.testing.strategies import report_schedules
from compat_core.run.ledger import RunLedger
from compat_core.semantics import v1_logs
from compat_core.semantics.observed import V1Semantics, V2Semantics
from compat_core.semantics.records import Record
from compat_core.semantics.rounds import CheckpointStatus, merge_validation

pytestmark = pytest.mark.one_pass  # plain code, no Ray: the same in either setting (CI's first pass)

EXAMPLES = settings(max_examples=300, deadline=None)


@EXAMPLES
@given(report_schedules())
def test_v1_and_v2_share_checkpoints_validation_and_callbacks(schedule) -> None:
    rounds = schedule.to_rounds()
    v1, v2 = V1Semantics().outcome(rounds), V2Semantics().outcome(rounds)
    assert same(list(v1.checkpoints), list(v2.checkpoints))
    assert same(v1.after_report_calls, v2.after_report_calls)
    assert_equivalent((v1, v2))  # every remaining difference is a documented one


@EXAMPLES
@given(report_schedules())
def test_v1_dataframe_restricted_to_checkpoint_rows_equals_v2(schedule) -> None:
    rounds = schedule.to_rounds()
    v1, v2 = V1Semantics().outcome(rounds), V2Semantics().outcome(rounds)
    checkpoint_rows = [v1.dataframe_rows[c.round_index] for c in v1.checkpoints] if v1.dataframe_rows else []
    assert same(checkpoint_rows, list(v2.dataframe_rows or []))


@EXAMPLES
@given(report_schedules())
def test_differences_are_exactly_the_documented_ones(schedule) -> None:
    rounds = schedule.to_rounds()
    v1, v2 = V1Semantics().outcome(rounds), V2Semantics().outcome(rounds)
    aspects = {d.aspect for d in differences(v1, v2)}
    has_checkpoints = any(r.has_checkpoint for r in rounds)
    # V1 logs every round, V2 none: they differ exactly when there was a round.
    assert ("progress.csv/result.json" in aspects) == bool(rounds)
    # result.metrics: V1 the last report (validated), V2 the last checkpoint's.
    last = merge_validation(rounds[-1].rank0_metrics, rounds[-1].validation) if rounds else {}
    expected_v2 = v2.checkpoints[-1].metrics if has_checkpoints else None
    assert same(v1.result_metrics, last) and same(v2.result_metrics, expected_v2)
    assert ("result.metrics" in aspects) == (not same(last, expected_v2))


@EXAMPLES
@given(report_schedules())
def test_validation_merges_the_same_way_in_both(schedule) -> None:
    rounds = schedule.to_rounds()
    for outcome in (V1Semantics().outcome(rounds), V2Semantics().outcome(rounds)):
        for kept in outcome.checkpoints:
            round_ = rounds[kept.round_index]
            if kept.status is CheckpointStatus.VALIDATED:
                assert same(kept.metrics, {**round_.rank0_metrics, **round_.validation.metrics})
            else:  # failed, timed out or none: training metrics are never lost
                assert same(kept.metrics, round_.rank0_metrics)


class _Recorder(UserCallback):
    def __init__(self):
        self.calls = []

    def after_report(self, run_context, metrics, checkpoint):
        self.calls.append((tuple(metrics), checkpoint is not None))


@EXAMPLES
@given(schedule=report_schedules(validation=False), data=st.data())
def test_the_ledger_rebuilds_rounds_and_callbacks_in_any_arrival_order(schedule, data) -> None:
    records = [
        Record(rank, index, dict(r.metrics), r.checkpoint, False, 0.0, "CKPT" if r.checkpoint else None)
        for index, round_ in enumerate(schedule.rounds)
        for rank, r in enumerate(round_.reports)
    ]
    arrival = data.draw(st.permutations(records))
    recorder = _Recorder()
    ledger = RunLedger(schedule.num_workers, callbacks=[recorder])
    for record in arrival:
        ledger.record(record)
    snapshot = ledger.close()
    rounds = schedule.to_rounds()
    assert same(recorder.calls, list(V2Semantics().outcome(rounds).after_report_calls))
    assert [r.per_worker_metrics for r in snapshot.rounds()] == [r.per_worker_metrics for r in rounds]


@EXAMPLES
@given(report_schedules())
def test_other_ranks_reports_are_kept_as_reported(schedule) -> None:
    from compat_core.semantics.result import worker_dataframe

    records = [
        Record(rank, index, dict(r.metrics), r.checkpoint, False, float(index))
        for index, round_ in enumerate(schedule.rounds)
        for rank, r in enumerate(round_.reports)
    ]
    frame = worker_dataframe(records)
    for index, round_ in enumerate(schedule.rounds):
        for rank, report in enumerate(round_.reports):
            row = frame[(frame.report_index == index) & (frame.world_rank == rank)].iloc[0].to_dict()
            assert same({k: row[k] for k in report.metrics}, report.metrics)


@settings(max_examples=200, deadline=None)
@given(report_schedules(max_workers=1))
def test_v1_logs_keep_every_key_including_late_ones(tmp_path_factory, schedule) -> None:
    directory = tmp_path_factory.mktemp("logs")
    rows = list(V1Semantics().outcome(schedule.to_rounds()).logged_rows)
    if not rows:
        return
    (directory / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    v1_logs.repair_progress_csv(directory)
    header = (directory / "progress.csv").read_text().splitlines()[0].split(",")
    assert {h for h in header if h} == {k for r in rows for k in r}


_KEYS = st.sampled_from(["loss", "acc", "epoch", "timestamp", "attempt", "note"])  # two named like a fixed column
_VALUES = st.one_of(st.floats(allow_nan=False), st.integers(-5, 5), st.text(max_size=3), st.none())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 3), st.integers(0, 2), st.dictionaries(_KEYS, _VALUES, max_size=4)),
        min_size=1,
        max_size=12,
        unique_by=lambda r: r[:3],  # the ledger keeps a record once per (attempt, rank, index)
    ),
    st.randoms(use_true_random=False),
)
def test_the_worker_frame_is_the_frame_of_the_workers_rows(reports, random) -> None:
    """``Result.worker_metrics_dataframe`` (built column by column for speed) is exactly
    ``pd.DataFrame(worker_rows(records))``: columns in first-appearance order, a metric named
    like a fixed column in its place with the fixed value, missing keys as NaN, same dtypes."""
    import pandas as pd

    from compat_core.semantics.result import worker_dataframe
    from compat_core.semantics.stored import worker_rows

    records = [
        Record(rank, index, metrics, False, False, 1.8e9 + index, attempt=attempt)
        for attempt, rank, index, metrics in reports
    ]
    random.shuffle(records)
    built, expected = worker_dataframe(records), pd.DataFrame(worker_rows(records))
    pd.testing.assert_frame_equal(built, expected)
