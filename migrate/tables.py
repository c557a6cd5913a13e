"""Old -> new name tables, as data. Qualified names are what libcst resolves."""

from __future__ import annotations

GUIDE = "https://github.com/ray-project/ray/issues/49454"

# Modules whose public names moved to ray.train.
AIR_MODULES = ("ray.air", "ray.air.config", "ray.air.checkpoint", "ray.air.result")

# ray.air names that have a ray.train home, by name (the module they came from varies).
AIR_TO_TRAIN = {
    "ScalingConfig": "ScalingConfig",
    "RunConfig": "RunConfig",
    "CheckpointConfig": "CheckpointConfig",
    "FailureConfig": "FailureConfig",
    "Checkpoint": "Checkpoint",
    "Result": "Result",
}  # not DatasetConfig: ray.train.DataConfig takes other arguments (RTM125 flags it with the mapping)

SESSION_MODULES = ("ray.air.session", "ray.train.session", "ray.train._internal.session")

# session.<name>(...) -> <train>.<replacement>(...)
SESSION_FUNCTIONS = {
    "report": "report",
    "get_checkpoint": "get_checkpoint",
    "get_dataset_shard": "get_dataset_shard",
    "get_world_rank": "get_context().get_world_rank",
    "get_local_rank": "get_context().get_local_rank",
    "get_world_size": "get_context().get_world_size",
    "get_local_world_size": "get_context().get_local_world_size",
    "get_node_rank": "get_context().get_node_rank",
    "get_experiment_name": "get_context().get_experiment_name",
    "get_trial_name": "get_context().get_trial_name",
    "get_trial_id": "get_context().get_trial_id",
    "get_trial_dir": "get_context().get_trial_dir",
    "get_trial_resources": "get_context().get_trial_resources",
}

# Inside a Tune function trainable, these session functions are ray.tune's (Tune has no datasets).
TUNE_SESSION_FUNCTIONS = frozenset(SESSION_FUNCTIONS) - {"get_dataset_shard"}

# What `--target compat` moves from ray.train to compat.
COMPAT_NAMES = frozenset(
    {
        "report", "get_context", "get_checkpoint", "get_dataset_shard", "Checkpoint", "ScalingConfig",
        "RunConfig", "CheckpointConfig", "FailureConfig", "UserCallback", "ValidationConfig",
        "ValidationTaskConfig", "CheckpointUploadMode", "Result", "session", "torch",
        "get_all_reported_checkpoints", "get_preemption_info", "CheckpointConsistencyMode", "DataConfig",
        "SyncConfig", "BackendConfig", "TRAIN_DATASET_KEY", "TrainingFailedError", "WorkerGroupError",
        "ControllerError", "ReportedCheckpoint", "ReportedCheckpointStatus", "LoggingConfig",
        "NCCLHangError", "PreemptionError", "PreemptionInfo", "ValidationFn", "TrainContext",
    }
)  # fmt: skip
COMPAT_TORCH_NAMES = frozenset(
    {
        "TorchTrainer", "prepare_model", "prepare_data_loader", "get_device", "get_devices", "TorchConfig",
        "TorchCheckpoint", "accelerate", "backward", "enable_reproducibility", "prepare_optimizer",
    }
)  # fmt: skip
# Every ray.train module compat has a drop-in for: (compat's module, the names it takes over).
# tests/migrate/test_rule_docs.py checks these against compat's own exports.
COMPAT_MODULES: dict[str, tuple[str, frozenset[str]]] = {
    "ray.train": ("compat", COMPAT_NAMES),
    "ray.train.torch": ("compat.torch", COMPAT_TORCH_NAMES),
    "ray.train.xgboost": (
        "compat.xgboost",
        frozenset({"XGBoostTrainer", "XGBoostConfig", "XGBoostCheckpoint", "RayTrainReportCallback"}),
    ),
    "ray.train.lightgbm": (
        "compat.lightgbm",
        frozenset({"LightGBMTrainer", "LightGBMConfig", "LightGBMCheckpoint", "RayTrainReportCallback",
                   "get_network_params", "normalize_pandas_for_lightgbm"}),
    ),
    "ray.train.tensorflow": (
        "compat.tensorflow",
        frozenset({"TensorflowTrainer", "TensorflowConfig", "TensorflowCheckpoint", "prepare_dataset_shard"}),
    ),
    "ray.train.tensorflow.keras": ("compat.tensorflow.keras", frozenset({"ReportCheckpointCallback"})),
    "ray.train.lightning": (
        "compat.lightning",
        frozenset({"RayDDPStrategy", "RayDeepSpeedStrategy", "RayFSDPStrategy", "RayLightningEnvironment",
                   "RayTrainReportCallback", "prepare_trainer"}),
    ),
    "ray.train.huggingface.transformers": (
        "compat.huggingface.transformers", frozenset({"RayTrainReportCallback", "prepare_trainer"}),
    ),
}  # fmt: skip

FRAMEWORK_CHECKPOINTS = frozenset(
    {
        "ray.train.torch.TorchCheckpoint", "ray.train.torch.torch_checkpoint.TorchCheckpoint",
        "ray.train.torch.LegacyTorchCheckpoint", "ray.train.tensorflow.TensorflowCheckpoint",
        "ray.train.lightgbm.LightGBMCheckpoint", "ray.train.xgboost.XGBoostCheckpoint",
        "ray.train.huggingface.TransformersCheckpoint", "ray.train.lightning.LightningCheckpoint",
        "ray.air.checkpoint.TorchCheckpoint", "ray.train.sklearn.SklearnCheckpoint",
        # compat re-exports Ray's: `--target compat` must not lose the finding (compat.torch's is Ray's class)
        "compat.torch.TorchCheckpoint", "compat.xgboost.XGBoostCheckpoint", "compat.lightgbm.LightGBMCheckpoint",
        "compat.tensorflow.TensorflowCheckpoint",
    }
)  # fmt: skip

# compat.Checkpoint is Ray's: code moved onto compat keeps calling what no longer exists.
CHECKPOINT_CLASSES = frozenset({"ray.train.Checkpoint", "ray.air.checkpoint.Checkpoint", "ray.air.Checkpoint",
                                "ray.train._checkpoint.Checkpoint", "compat.Checkpoint"})  # fmt: skip
REMOVED_CHECKPOINT_METHODS = ("from_dict", "to_dict", "from_bytes", "to_bytes", "from_uri", "to_uri")

TUNE_CALLBACK_PREFIXES = ("ray.tune.", "ray.air.integrations.")
TRAINER_SUFFIX = "Trainer"
