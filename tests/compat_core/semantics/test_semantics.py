"""The backends' semantics as plain functions (no Ray)."""

import pytest

from compat_core.semantics.observed import V1Semantics, V2Semantics
from compat_core.semantics.rounds import CheckpointStatus, ReportRound, ValidationOutcome, WorkerReport

pytestmark = pytest.mark.one_pass  # plain code, no Ray: the same in either setting (CI's first pass)


def rnd(index, metrics0, metrics1=None, ckpt=False, validation=None, wants=False):
    reports = (WorkerReport(0, metrics0, ckpt, wants), WorkerReport(1, metrics1 or {}, ckpt, wants))
    return ReportRound(index, reports, f"checkpoint_{index}" if ckpt else None, validation)


ROUNDS = [
    rnd(0, {"loss": 3.0}, {"loss": 3.1}),
    rnd(1, {"loss": 2.0}, {"loss": 2.1}, ckpt=True),
    rnd(2, {"loss": 1.0, "late": 1}, {"loss": 1.1}),
]


def test_v1_keeps_every_rank0_report() -> None:
    out = V1Semantics().outcome(ROUNDS)
    assert out.logged_rows == ({"loss": 3.0}, {"loss": 2.0}, {"loss": 1.0, "late": 1})
    assert out.result_metrics == {"loss": 1.0, "late": 1}
    assert out.dataframe_rows == out.logged_rows


def test_v2_keeps_only_checkpoint_metrics_of_rank0() -> None:
    out = V2Semantics().outcome(ROUNDS)
    assert out.logged_rows == ()
    assert out.result_metrics == {"loss": 2.0}
    assert out.dataframe_rows == ({"loss": 2.0},)
    assert [c.round_index for c in out.checkpoints] == [1]


def test_v2_without_checkpoints_has_no_metrics() -> None:
    out = V2Semantics().outcome(ROUNDS[:1])
    assert out.result_metrics is None and out.dataframe_rows is None


def test_v2_keep_v1_logs_restores_v1_rows() -> None:
    out = V2Semantics().outcome(ROUNDS, keep_v1_logs=True)
    assert out.logged_rows == V1Semantics().outcome(ROUNDS).logged_rows
    assert out.result_metrics == {"loss": 2.0}  # result.metrics keeps V2's meaning


def test_both_call_after_report_with_every_worker_per_round() -> None:
    v1, v2 = V1Semantics().outcome(ROUNDS), V2Semantics().outcome(ROUNDS)
    assert v1.after_report_calls == v2.after_report_calls
    assert v1.after_report_calls[1] == (({"loss": 2.0}, {"loss": 2.1}), True)


def test_validation_overwrites_same_keys_and_failure_keeps_metrics() -> None:
    ok = ValidationOutcome(CheckpointStatus.VALIDATED, {"loss": 0.1, "acc": 0.9})
    failed = ValidationOutcome(CheckpointStatus.VALIDATION_FAILED, error="ValueError: x")
    rounds = [
        rnd(0, {"loss": 2.0}, ckpt=True, validation=ok, wants=True),
        rnd(1, {"loss": 1.0}, ckpt=True, validation=failed, wants=True),
    ]
    for semantics in (V1Semantics(), V2Semantics()):
        out = semantics.outcome(rounds)
        assert [c.metrics for c in out.checkpoints] == [{"loss": 0.1, "acc": 0.9}, {"loss": 1.0}]
        assert [c.status for c in out.checkpoints] == [
            CheckpointStatus.VALIDATED,
            CheckpointStatus.VALIDATION_FAILED,
        ]


def test_a_checkpoint_from_any_worker_registers_with_rank0_metrics() -> None:
    round_ = ReportRound(0, (WorkerReport(0, {"a": 1}), WorkerReport(1, {"a": 2}, True)))
    out = V2Semantics().outcome([round_])
    assert out.result_metrics == {"a": 1}


def test_a_validation_metric_merged_into_v1s_frame_has_the_type_v2s_frame_gives_it() -> None:
    """Every row validated: ints stay int64 (as V2's frame of the same metrics); a row without a
    validation is a hole (NaN), as pandas makes it from records."""
    import pandas as pd

    from compat_core.semantics.result import validated_dataframe
    from compat_core.semantics.rounds import CheckpointStatus, ReportRound, ValidationOutcome, WorkerReport

    frame = pd.DataFrame({"loss": [1.0, 0.5], "checkpoint_dir_name": ["c0", "c1"]})

    def rounds(validated):
        outcomes = {i: ValidationOutcome(CheckpointStatus.VALIDATED, {"epoch_validated": i}) for i in validated}
        return [ReportRound(i, (WorkerReport(0, {"loss": 1.0}, True),), f"c{i}", outcomes.get(i)) for i in range(2)]

    both = validated_dataframe(frame, rounds({0, 1}))
    assert str(both["epoch_validated"].dtype) == "int64" and both["epoch_validated"].tolist() == [0, 1]
    pd.testing.assert_series_equal(
        both["epoch_validated"], pd.DataFrame([{"epoch_validated": 0}, {"epoch_validated": 1}])["epoch_validated"]
    )
    one = validated_dataframe(frame, rounds({1}))
    assert str(one["epoch_validated"].dtype) == "float64" and one["epoch_validated"].isna().tolist() == [True, False]
