"""ray-train-compat: one ``ray.train`` interface, V1 or V2 semantics by ``RAY_TRAIN_V2_ENABLED``.

``import compat as train`` and use it as ``ray.train``. See docs/compatibility.md.
"""

from compat import _version

RAY_VERSION = _version.check()  # fail with the fix before importing Ray's internals

# ruff: noqa: E402  (the version check must run before these imports)
# isort: off
from ray.train import Checkpoint
from ray.train.v2.api.report_config import CheckpointUploadMode
from ray.train.v2.api.validation_config import ValidationConfig, ValidationTaskConfig

from compat import session, torch
from compat._api import (
    get_checkpoint,
    get_context,
    get_dataset_shard,
    report,
)
from compat._context import TrainContext
from compat._model import CheckpointStatus
from compat._switch import backend
from compat._usage import CompatDeprecationWarning, NonFiniteMetricWarning, Usage, V1OnlyWarning
from compat.callbacks import UserCallback
from compat.config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
from compat.errors import (
    CallbackError,
    CompatError,
    ControllerFailedError,
    InvalidSwitchValueError,
    NotInTrainingFunctionError,
    ReportError,
    TrainingFailedError,
    UnsupportedRayError,
    WorkerGroupFailedError,
)
from compat.result import ReportedCheckpoint, Result
# isort: on

__all__ = [
    "CallbackError",
    "Checkpoint",
    "CheckpointConfig",
    "CheckpointStatus",
    "CheckpointUploadMode",
    "CompatDeprecationWarning",
    "CompatError",
    "ControllerFailedError",
    "FailureConfig",
    "InvalidSwitchValueError",
    "NonFiniteMetricWarning",
    "NotInTrainingFunctionError",
    "ReportError",
    "ReportedCheckpoint",
    "Result",
    "RunConfig",
    "ScalingConfig",
    "TrainContext",
    "TrainingFailedError",
    "UnsupportedRayError",
    "Usage",
    "UserCallback",
    "V1OnlyWarning",
    "ValidationConfig",
    "ValidationTaskConfig",
    "WorkerGroupFailedError",
    "backend",
    "get_checkpoint",
    "get_context",
    "get_dataset_shard",
    "report",
    "session",
    "torch",
]
