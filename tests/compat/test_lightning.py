"""Lightning under compat: the seed's own callback, Ray's RayTrainReportCallback with
RayDDPStrategy and prepare_trainer, and a run mixing every report door with a failure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

import compat as train
from compat.torch import TorchTrainer
from examples import lightning_report_callback as seed

pytestmark = [pytest.mark.ray, pytest.mark.extended_rerun]  # CI: V1 on V2's engine in test_v1_engine.py


def frame_without_time(result):
    return result.worker_metrics_dataframe.drop(columns=["timestamp"]).round(6)


# Lightning under V2 in CI: the mixed run below (every mode and engine); these v2 cases, the full suite.
@pytest.mark.extended_cases("v2")
@pytest.mark.parametrize("reporter", ["ray", "compat"])
def test_the_seed_callback_is_seen_whether_it_reports_through_ray_or_compat(backend, storage, reporter) -> None:
    result = seed.main(storage, reporter=reporter, epochs=2)
    frame = result.worker_metrics_dataframe
    assert frame[["report_index", "world_rank"]].values.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert frame["train_loss"].notna().all()
    assert {u.kind for u in result.v1_usage} == {"free-floating-report"}
    if backend == "v1":
        assert len(result.metrics_dataframe) == 2
    else:
        assert result.metrics is None  # V2 keeps no free-floating metrics


@pytest.mark.extended_cases("v2")
def test_rays_report_callback_checkpoints_every_epoch(backend, storage) -> None:
    result = seed.main(storage, ray_callback=True, epochs=2)
    assert [r.has_checkpoint for r in result.report_rounds] == [True, True]
    assert len(result.best_checkpoints) == 2
    assert result.metrics["epoch"] == 1 and "train_loss" in result.metrics
    assert result.report_rounds[-1].checkpoint_dir_name == os.path.basename(result.checkpoint.path)


class CallLog(train.UserCallback):
    def __init__(self, path: str) -> None:
        self.path = path

    def after_report(self, run_context, metrics, checkpoint):
        with open(self.path, "a") as f:
            rounded = [{k: round(v, 6) if isinstance(v, float) else v for k, v in m.items()} for m in metrics]
            f.write(json.dumps({"metrics": rounded, "checkpoint": checkpoint is not None}) + "\n")

    def after_exception(self, run_context, worker_exceptions):
        with open(self.path, "a") as f:
            f.write(json.dumps({"exception": sorted(worker_exceptions)}) + "\n")


def every_door_and_a_failure(config):
    import ray.train

    rank = train.get_context().get_world_rank()
    train.report({"door": "compat"})
    ray.train.report({"door": "ray.train"})
    seed.train_func_per_worker({"reporter": "ray", "ray_callback": True, "epochs": 2})
    marker = Path(config["marker"])
    if rank == 1 and not marker.exists():
        marker.write_text("failed once")
        raise RuntimeError("injected failure")


@pytest.mark.one_pass  # every mode and engine here, each set by the test: CI's second pass would repeat them
@pytest.mark.extended  # 2 min; CI: the seed callback and Ray's report callback above, a failed run in test_runs.py
def test_a_mixed_run_with_a_failure_gives_the_same_calls_and_frame_in_both_modes(
    ray_cluster, monkeypatch, tmp_path
) -> None:
    seen = {}
    # V1 semantics on each engine, and V2's (COMPAT_V1_ENGINE matters to the v1 backend only).
    for run, setting, engine in (("v1", "0", "v1"), ("v1-on-v2", "0", "v2"), ("v2", "1", "v2")):
        monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", setting)
        monkeypatch.setenv("COMPAT_V1_ENGINE", engine)
        base = tmp_path / run
        base.mkdir()
        log = str(base / "calls.jsonl")
        result = TorchTrainer(
            every_door_and_a_failure,
            train_loop_config={"marker": str(base / "marker")},
            scaling_config=train.ScalingConfig(num_workers=2),
            run_config=train.RunConfig(
                storage_path=str(base),
                name="mixed",
                failure_config=train.FailureConfig(max_failures=1),
                callbacks=[CallLog(log)],
            ),
        ).fit()
        calls = [json.loads(line) for line in Path(log).read_text().splitlines()]
        seen[run] = (calls, frame_without_time(result))
    v1_calls, v1_frame = seen["v1"]
    for other in ("v1-on-v2", "v2"):
        calls, frame = seen[other]
        assert calls == v1_calls, other
        pd.testing.assert_frame_equal(frame, v1_frame)
    # Two attempts of four rounds each (compat, ray.train, two Lightning epochs), one failure between.
    assert [c.get("exception") for c in v1_calls] == [None] * 4 + [[1]] + [None] * 4
    assert v1_frame["attempt"].tolist() == [0] * 8 + [1] * 8
    assert v1_frame["door"].tolist()[:4] == ["compat", "compat", "ray.train", "ray.train"]
