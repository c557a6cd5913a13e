"""The seed programs adapted to compat run under both settings."""

from __future__ import annotations

import pytest

from compat_core.releases import facts
from examples import after_report_callback, async_validation, config_and_results, torchmetrics_aggregation

pytestmark = [pytest.mark.ray, pytest.mark.extended_rerun]  # CI: the seeds on V2's engine in test_v1_engine.py


@pytest.mark.extended  # CI: docs/testing.md's program runs this example under both backends (test_docs.py)
def test_torchmetrics_aggregation(backend, storage, capsys) -> None:
    result = torchmetrics_aggregation.main(storage, num_epochs=2)
    assert len(result.best_checkpoints) == 2
    assert {"valid_loss", "mean_valid_loss_collected", "mape_collected"} <= set(result.metrics)
    assert str(result.metrics["valid_loss"]) in capsys.readouterr().out


def test_after_report_callback_sees_every_worker(backend, storage) -> None:
    result, calls = after_report_callback.main(storage)
    assert calls == [[{"rank": 0}, {"rank": 1}]]
    assert result.v1_usage[0].kind == "free-floating-report"


def test_async_validation_both_forms(backend, storage) -> None:
    result = async_validation.main(storage, epochs=2)
    statuses = [c.status.value for c in result.reported_checkpoints]
    if backend == "v2" and facts.V2_DEVICE_NEEDS_WORKER:
        # Raw Ray 2.50's V2: the even epoch's validate_fn iterates a dataset with
        # iter_torch_batches(), whose get_device() raises outside a training worker (docs §27).
        assert statuses == ["VALIDATION_FAILED", "VALIDATED"]
        [error] = [r.validation.error for r in result.report_rounds if r.validation and r.validation.error]
        assert "TrainFnUtils has not been initialized" in error and "iter_torch_batches(device='cpu')" in error
        return
    assert statuses == ["VALIDATED", "VALIDATED"]
    for epoch, reported in enumerate(result.reported_checkpoints):
        assert reported.metrics["epoch_validated"] == epoch  # validation metrics merged
        assert reported.metrics["score"] == pytest.approx(1 / (1 + reported.metrics["loss"]))


def test_config_and_results_show_the_v1_v2_difference(backend, storage) -> None:
    result = config_and_results.main(storage)
    if backend == "v1":
        assert result.metrics["epoch"] == 1 and len(result.metrics_dataframe) == 2
    else:
        assert result.metrics is None and result.metrics_dataframe is None
    assert result.worker_metrics_dataframe["rows_seen"].sum() == 48 * 2  # each worker saw its shard twice
    # The example prints the frame: V1's (2 rows) where V2's has none, a read the flip changes,
    # recorded under either setting (§4).
    assert {u.kind for u in result.v1_usage} == {"free-floating-report", "session-api", "metrics-dataframe"}
