"""Every public name imports and constructs under both settings."""

import importlib

import pytest
import ray.train

import compat
from compat_core.releases import standins

EXPECTED = [
    "BackendConfig",
    "CallbackError",
    "Checkpoint",
    "CheckpointConfig",
    "CheckpointConsistencyMode",
    "CheckpointStatus",
    "CheckpointUploadMode",
    "CompatDeprecationWarning",
    "CompatError",
    "ControllerError",
    "ControllerFailedError",
    "CorruptStoredDataWarning",
    "DataConfig",
    "DataParallelTrainer",
    "FailureConfig",
    "InvalidSwitchValueError",
    "LoggingConfig",
    "NCCLHangError",
    "NonFiniteMetricWarning",
    "NotInTrainingFunctionError",
    "PreemptionError",
    "PreemptionInfo",
    "ReportError",
    "ReportedCheckpoint",
    "ReportedCheckpointStatus",
    "Result",
    "RunConfig",
    "ScalingConfig",
    "SyncConfig",
    "TRAIN_DATASET_KEY",
    "TrainContext",
    "TrainingFailedError",
    "UnsupportedRayError",
    "UntestedRayWarning",
    "Usage",
    "UserCallback",
    "V1OnlyWarning",
    "ValidationConfig",
    "ValidationFn",
    "ValidationTaskConfig",
    "WorkerGroupError",
    "WorkerGroupFailedError",
    "backend",
    "get_all_reported_checkpoints",
    "get_checkpoint",
    "get_context",
    "get_dataset_shard",
    "get_preemption_info",
    "migration_report",
    "report",
    "session",
    "torch",
]


def test_all_is_sorted_and_pinned() -> None:
    assert compat.__all__ == sorted(compat.__all__)
    # plus the names this (older) Ray still exports and newer releases removed
    assert compat.__all__ == sorted([*EXPECTED, *standins.retired_names("ray.train")])


@pytest.mark.parametrize("setting", ["0", "1"])
def test_every_name_imports_and_constructs(setting: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", setting)
    module = importlib.reload(compat)
    for name in module.__all__:
        assert getattr(module, name) is not None
    module.ScalingConfig(num_workers=2, trainer_resources={"CPU": 0})
    module.RunConfig(name="x", storage_path=str(tmp_path), callbacks=[module.UserCallback()])
    module.CheckpointConfig(num_to_keep=2, checkpoint_score_attribute="loss", checkpoint_score_order="min")
    module.FailureConfig(max_failures=1)
    module.ValidationConfig(fn=lambda checkpoint: {})
    module.ValidationTaskConfig(fn_kwargs={"a": 1}, timeout_s=5)
    assert module.CheckpointUploadMode.ASYNC
    module.Checkpoint.from_directory(str(tmp_path))
    module.torch.TorchTrainer(lambda: None, scaling_config=module.ScalingConfig(num_workers=2))
    for name in [
        "report",
        "get_checkpoint",
        "get_dataset_shard",
        "get_world_rank",
        "get_local_rank",
        "get_world_size",
        "get_experiment_name",
    ]:
        assert callable(getattr(module.session, name))
    for name in ["TorchTrainer", "prepare_model", "prepare_data_loader", "get_device"]:
        assert callable(getattr(module.torch, name))
    module.DataParallelTrainer(lambda: None, backend_config=module.BackendConfig())
    assert module.backend() == ("v2" if setting == "1" else "v1")


def test_ray_configs_are_accepted_in_place_of_compat_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray.air.config import RunConfig as V1Run
    from ray.air.config import ScalingConfig as V1Scaling

    from compat_core.releases.standins import v2_config_classes

    V2Checkpoint, _, V2Run, _ = v2_config_classes()

    trainer = compat.torch.TorchTrainer(
        lambda: None,
        scaling_config=V1Scaling(num_workers=2, trainer_resources={"CPU": 0}),
        run_config=V1Run(name="a", verbose=0),
    )
    assert trainer.scaling_config == compat.ScalingConfig(num_workers=2, trainer_resources={"CPU": 0})
    assert trainer.run_config.verbose == 0 and trainer.run_config.name == "a"
    trainer = compat.torch.TorchTrainer(
        lambda: None, run_config=V2Run(name="b", checkpoint_config=V2Checkpoint(num_to_keep=3))
    )
    assert trainer.run_config.checkpoint_config == compat.CheckpointConfig(num_to_keep=3)
    # V2's "DEPRECATED" sentinel is not a value: the default SyncConfig, as Ray's V1 RunConfig fills in
    assert trainer.run_config.sync_config == ray.train.SyncConfig()
    assert not trainer.run_config._v1_only_given()


def test_a_run_config_has_the_default_nested_configs_as_rays_does() -> None:
    """Ray Tune reads them from the RunConfig V1 code hands a Tuner (tests/compat/test_tune.py)."""
    run = compat.RunConfig(name="a")
    assert run.checkpoint_config == compat.CheckpointConfig() and run.failure_config == compat.FailureConfig()
    given = compat.CheckpointConfig(num_to_keep=2)
    assert compat.RunConfig(checkpoint_config=given).checkpoint_config is given


def test_wrong_config_types_say_what_is_expected() -> None:
    with pytest.raises(TypeError, match="scaling_config= takes a compat.ScalingConfig"):
        compat.torch.TorchTrainer(lambda: None, scaling_config={"num_workers": 2})
    with pytest.raises(ValueError, match="num_workers must be an int >= 0"):
        compat.ScalingConfig(num_workers=-1)
    with pytest.raises(ValueError, match=r"a \(min, max\) tuple with min >= 1"):
        compat.ScalingConfig(num_workers=(0, 2))
    with pytest.raises(TypeError, match="training function"):
        compat.torch.TorchTrainer("train.py")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: compat.torch.TorchTrainer(lambda: None, **kw),
        lambda **kw: compat.DataParallelTrainer(lambda: None, **kw),
        lambda **kw: __import__("compat.xgboost").xgboost.XGBoostTrainer(lambda: None, **kw),
    ],
    ids=["torch", "data_parallel", "xgboost"],
)
def test_every_trainer_takes_the_same_keywords_and_names_a_mistyped_one(make) -> None:
    trainer = make(train_loop_config={"lr": 0.1}, metadata={"a": 1}, run_config=compat.RunConfig(name="x"))
    assert trainer.train_loop_config == {"lr": 0.1} and trainer.metadata == {"a": 1}
    assert trainer.run_config.name == "x" and trainer.scaling_config == compat.ScalingConfig()
    with pytest.raises(TypeError, match="unexpected keyword argument 'scaling_cnofig'. Did you mean 'scaling_config'"):
        make(scaling_cnofig=compat.ScalingConfig(num_workers=2))
