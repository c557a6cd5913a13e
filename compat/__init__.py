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
    NotInTrainingFunctionError,
    get_checkpoint,
    get_context,
    get_dataset_shard,
    report,
)
from compat._checks import ReportError
from compat._context import TrainContext
from compat._model import CheckpointStatus
from compat._switch import InvalidSwitchValueError, backend
from compat._usage import CompatDeprecationWarning, Usage, V1OnlyWarning
from compat._version import UnsupportedRayError
from compat.callbacks import UserCallback
from compat.config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
from compat.errors import CallbackError, TrainingFailedError
from compat.result import ReportedCheckpoint, Result
# isort: on

__all__ = [
    "CallbackError",
    "Checkpoint",
    "CheckpointConfig",
    "CheckpointStatus",
    "CheckpointUploadMode",
    "CompatDeprecationWarning",
    "FailureConfig",
    "InvalidSwitchValueError",
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
    "backend",
    "get_checkpoint",
    "get_context",
    "get_dataset_shard",
    "report",
    "session",
    "torch",
]
