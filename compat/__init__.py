"""ray-train-compat: one ``ray.train`` interface, V1 or V2 semantics by ``RAY_TRAIN_V2_ENABLED``.

``import compat as train`` and use it as ``ray.train``. See docs/compatibility.md.
"""

import os as _os
from typing import Any as _Any

from compat import _shadowing

_shadowing.check_this_process()  # a project's own compat_core/, v1/ or v2/ first on the path: say so

from compat_core.migration import where as _where  # noqa: E402

_here = _os.path.dirname(__file__)
_where.add_library(_here, user_code=_os.path.join(_here, "testing"))

from compat_core import switch as _switch  # noqa: E402

# Before anything imports Ray's train package: a Ray without V1 may refuse =0 there (§34).
_switch.give_ray_what_it_accepts()

from compat_core import installed as version  # noqa: E402

RAY_VERSION = version.check()  # fail with the fix before importing Ray's internals

# ruff: noqa: E402  (the version check must run before these imports)
# isort: off
from ray.train import BackendConfig, Checkpoint, DataConfig, SyncConfig
from ray.train import TRAIN_DATASET_KEY
from compat_core.releases.standins import (
    CheckpointConsistencyMode,
    CheckpointUploadMode,
    LoggingConfig,
    NCCLHangError,
    PreemptionInfo,
    ValidationConfig,
    ValidationFn,
    ValidationTaskConfig,
)

from compat import session
from compat_core.releases import standins
from compat._api import (
    get_all_reported_checkpoints,
    get_checkpoint,
    get_context,
    get_dataset_shard,
    get_preemption_info,
    report,
)
from compat._context import TrainContext
from compat_core.semantics.rounds import CheckpointStatus
from compat_core.switch import backend
from compat._trainer import DataParallelTrainer
from compat_core.installed import UntestedRayWarning
from compat_core.migration.usage import CompatDeprecationWarning, NonFiniteMetricWarning, Usage, V1OnlyWarning
from compat_core.files.pickled import CorruptStoredDataWarning
from compat.callbacks import UserCallback
from compat_core.config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
from compat_core.errors import (
    CallbackError,
    CompatError,
    ControllerFailedError,
    InvalidSwitchValueError,
    NotInTrainingFunctionError,
    PreemptedFailedError,
    ReportError,
    TrainingFailedError,
    UnsupportedRayError,
    WorkerGroupFailedError,
)

# V2's names for its failure families (compat's errors are also Ray's V2 classes).
WorkerGroupError = WorkerGroupFailedError
ControllerError = ControllerFailedError
PreemptionError = PreemptedFailedError
ReportedCheckpointStatus = CheckpointStatus
from compat_core.semantics.result import ReportedCheckpoint, Result
from compat.readiness._results import migration_report
# isort: on

__all__ = [
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

# Names this (older) Ray's ray.train still exports and newer releases removed (compat/releases.py).
__all__ = standins.export_retired(globals(), "ray.train", __all__)


def __getattr__(name: str) -> _Any:
    """``compat.torch`` is imported when first used, as ``ray.train.torch`` is: importing
    torch takes a second, which the run ledger's process and a user of the XGBoost or
    LightGBM trainers never need to pay."""
    if name == "torch":
        import importlib

        return importlib.import_module("compat.torch")
    raise AttributeError(f"module 'compat' has no attribute {name!r}")
