"""Ray 2.60's V2 features under compat: a custom checkpoint upload
(``report(checkpoint_upload_fn=, delete_local_checkpoint_after_upload=)``) observed as raw V2
observes it; with V1 semantics, what each engine does with V2's features (docs/compatibility.md §31)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

import compat
from compat_core import config, switch
from compat_core.errors import CompatError
from compat_core.releases import facts


def _uploader(api: Any) -> Any:
    """The program's own upload: into ``custom/`` of the experiment directory (Ray requires the
    persisted checkpoint under it)."""
    from ray.train import Checkpoint

    def upload(checkpoint: Checkpoint, name: str) -> Checkpoint:
        target = os.path.join(api.get_context().get_storage().experiment_fs_path, "custom", name)
        shutil.copytree(checkpoint.path, target)
        return Checkpoint.from_directory(target)

    return upload


def _upload_loop(config: dict[str, Any]) -> list[bool]:
    """Three checkpoints, each uploaded by the program's own function; the local directories
    are deleted after upload. Returns whether each local directory was left."""
    api = importlib.import_module(config["api"])
    from ray.train import Checkpoint

    upload = _uploader(api)

    left = []
    for step in range(3):
        local = tempfile.mkdtemp()
        Path(local, "model.txt").write_text(str(step))
        api.report(
            {"step": step, "loss": 1.0 / (step + 1)},
            checkpoint=Checkpoint.from_directory(local),
            checkpoint_upload_fn=upload,
            delete_local_checkpoint_after_upload=True,
        )
        left.append(os.path.exists(local))
    return left


def _observe(api: str, tmp_path: Path) -> dict[str, Any]:
    """Run the loop through ``api``'s trainer (raw ``ray.train`` or ``compat``): what it sees."""
    train = importlib.import_module(api)
    torch = importlib.import_module(f"{api}.torch")
    trainer = torch.TorchTrainer(
        _upload_loop,
        train_loop_config={"api": api},
        scaling_config=train.ScalingConfig(num_workers=1),
        run_config=train.RunConfig(name="upload", storage_path=str(tmp_path / api)),
    )
    result = trainer.fit()
    run = tmp_path / api / "upload"
    uploaded = sorted((run / "custom").iterdir())

    def where(path: str) -> list[str]:  # under custom/, and what the checkpoint holds
        return [os.path.relpath(path, run).split(os.sep)[0], Path(path, "model.txt").read_text()]

    return {
        "metrics": result.metrics,
        "checkpoint": where(result.checkpoint.path),
        "uploaded": [p.joinpath("model.txt").read_text() for p in uploaded],
        "best": [where(c.path) for c, _ in result.best_checkpoints],
        "local_left": result.return_value,
        "beside": sorted(p.name for p in run.iterdir() if p.name.startswith("checkpoint_")),
    }


@pytest.mark.ray
def test_a_custom_checkpoint_upload_is_observed_as_raw_v2_observes_it(v2: None, tmp_path: Path) -> None:
    raw = _observe("ray.train", tmp_path)
    ours = _observe("compat", tmp_path)
    assert ours == raw
    assert raw["local_left"] == [False, False, False] and len(raw["uploaded"]) == 3  # the program's upload ran


def _v1_upload_loop(config: dict[str, Any]) -> None:
    from ray.train import Checkpoint

    local = tempfile.mkdtemp()
    Path(local, "model.txt").write_text("0")
    compat.report({"step": 0}, checkpoint=Checkpoint.from_directory(local), delete_local_checkpoint_after_upload=True)
    Path(config["flags"]).write_text(json.dumps({"local_left": os.path.exists(local)}))

    local = tempfile.mkdtemp()
    compat.report({"step": 1}, checkpoint=Checkpoint.from_directory(local), checkpoint_upload_fn=_uploader(compat))


@pytest.mark.ray
def test_v1_semantics_delete_the_local_checkpoint_and_a_custom_upload_needs_v2s_engine(
    v1: None, tmp_path: Path
) -> None:
    """V1's engine persists the checkpoint and deletes the local directory; it has no custom
    upload: the report that asks for one fails at once, naming the way out. On V2's engine
    (COMPAT_V1_ENGINE=v2) both work, with V1's semantics."""
    flags = tmp_path / "flags.json"
    trainer = compat.torch.TorchTrainer(
        _v1_upload_loop,
        train_loop_config={"flags": str(flags)},
        run_config=compat.RunConfig(name="v1upload", storage_path=str(tmp_path / "runs")),
    )
    on_v1_engine = switch.mode().engine is switch.V1
    if on_v1_engine:
        with pytest.raises(compat.TrainingFailedError) as failed:
            trainer.fit()
        (cause,) = failed.value.worker_failures.values()
        assert isinstance(cause, CompatError) and "COMPAT_V1_ENGINE=v2" in str(cause)
        result = failed.value.result
        assert not list(tmp_path.rglob("custom"))
    else:
        result = trainer.fit()
        assert len(list(tmp_path.rglob("custom/*/"))) == 1  # the program's upload ran for step 1
    assert json.loads(flags.read_text()) == {"local_left": False}
    assert [r["step"] for r in result.metrics_dataframe.to_dict("records")] == [0, 1][: 1 if on_v1_engine else 2]


@pytest.mark.parametrize(
    "make",
    [
        lambda: compat.ScalingConfig(num_workers=2, label_selector={"zone": "a"}),
        lambda: compat.ScalingConfig(num_workers=(1, 2)),
        lambda: compat.ScalingConfig(use_tpu=True, resources_per_worker={"TPU": 1}),
        lambda: compat.FailureConfig(max_preemption_failures=2),
        lambda: compat.FailureConfig(preemption_grace_s=5.0),
        lambda: compat.FailureConfig(controller_failure_limit=0),
    ],
    ids=["label_selector", "elastic", "tpu", "max_preemption_failures", "preemption_grace_s", "controller_limit"],
)
def test_v2_engine_options_fail_when_made_where_v1s_engine_runs_v1(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0")
    monkeypatch.setenv("COMPAT_V1_ENGINE", "v1")
    with pytest.raises(CompatError, match=r"feature of Ray's V2 engine.*COMPAT_V1_ENGINE=v2"):
        make()
    monkeypatch.setenv("COMPAT_V1_ENGINE", "v2")  # V1 semantics on V2's engine: made
    made = make()
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1")  # and under v2
    assert make() == made


def test_v2_engine_options_reach_rays_v2_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Passed to V2's own configs; on a Ray whose V2 configs lack them, a CompatError at fit()
    saying to upgrade."""
    import dataclasses

    from compat_core.releases import standins

    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1")
    scaling = compat.ScalingConfig(num_workers=2, label_selector={"zone": "a"}, elastic_resize_monitor_interval_s=5.0)
    if "label_selector" not in {f.name for f in dataclasses.fields(standins.v2_config_classes()[3])}:
        with pytest.raises(CompatError, match=r"ScalingConfig\(label_selector=...\) is not in Ray .* Upgrade Ray"):
            config.ray_scaling_config(scaling, v2_engine=True)
        return
    theirs = config.ray_scaling_config(scaling, v2_engine=True)
    assert (theirs.label_selector, theirs.elastic_resize_monitor_interval_s) == ({"zone": "a"}, 5.0)
    failure = config.ray_v2_failure_config(compat.FailureConfig(max_failures=1, max_preemption_failures=4))
    assert (failure.max_failures, failure.max_preemption_failures, failure.preemption_grace_s) == (1, 4, 0.0)


def test_a_trainer_overriding_v1s_hooks_is_refused_when_made() -> None:
    class Custom(compat.torch.TorchTrainer):
        def setup(self) -> None:
            self.model = object()

    with pytest.raises(CompatError, match=r"Custom overrides setup\(\).*train_loop_per_worker"):
        Custom(lambda: None)


def _asks_for_validation_wrongly(config: dict[str, Any]) -> list[list[str]]:
    """Two mistakes a program makes with V2's validation, caught: what each raised."""
    api = importlib.import_module(config["api"])
    from ray.train import Checkpoint

    seen = []
    local = tempfile.mkdtemp()
    for checkpoint in (None, Checkpoint.from_directory(local)):  # no checkpoint; no validation_config
        try:
            api.report({"loss": 1.0}, checkpoint=checkpoint, validation=True)
            seen.append(["no error", ""])
        except Exception as error:
            seen.append([type(error).__name__, str(error).splitlines()[0]])
    return seen


@pytest.mark.ray
def test_validation_mistakes_raise_as_raw_v2_raises(v2: None, tmp_path: Path) -> None:
    """Same exception class, same first line, inside the training function."""
    seen = {}
    for api in ("ray.train", "compat"):
        train, torch = importlib.import_module(api), importlib.import_module(f"{api}.torch")
        trainer = torch.TorchTrainer(
            _asks_for_validation_wrongly,
            train_loop_config={"api": api},
            run_config=train.RunConfig(name="validation", storage_path=str(tmp_path / api)),
        )
        seen[api] = trainer.fit().return_value
    assert seen["compat"] == seen["ray.train"]
    assert [kind for kind, _ in seen["ray.train"]] == ["ValueError", "ValueError"]


@pytest.mark.skipif(not facts.PREEMPTION, reason="PreemptionError is Ray 2.58's")
def test_a_run_v2_gave_up_on_after_preemptions_fails_with_rays_preemption_error() -> None:
    """``except ray.train.PreemptionError:`` (or compat's) catches the failure of a fit whose
    preemptions exceeded ``max_preemption_failures``; ``compat.PreemptionError`` is built as
    Ray's. (The run itself, on a cluster whose nodes are drained: test_cluster_features.)"""
    # Ray's class where it is defined: ray.train exports it under V2 only (this test runs in both passes)
    from ray.train.v2.api.exceptions import PreemptionError as RayPreemptionError

    from compat_core import errors

    info = compat.PreemptionInfo(deadline_ms=5, preempted_node_to_ranks={"node": [0]})
    cause = RayPreemptionError(info, drain_timed_out=True)
    failed = errors.training_failed(f"Training failed: {cause}", None, {}, cause)
    assert isinstance(failed, RayPreemptionError) and isinstance(failed, compat.TrainingFailedError)
    assert isinstance(failed, compat.PreemptionError) and failed.cause is cause
    assert (failed.preemption_info, failed.drain_timed_out) == (info, True)
    built = compat.PreemptionError(info, drain_timed_out=True)
    assert str(built) == str(cause) and built.preemption_info is info
