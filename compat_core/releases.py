"""Every difference between the Ray releases compat supports, in one module.

compat runs on Ray 2.44 to 2.60 (:mod:`compat_core.version` holds the range). Ray's public
``ray.train`` API gained names release by release; this module says which release has what
(read from the released wheels) and gives each name from Ray where Ray has it, and compat's
own equivalent where it does not. Everything else in compat imports version-dependent names
from here, so a new Ray release means editing this file.

The facts, by release:

========  ==================================================================================
2.44      V2 engine (opt-in), ``UserCallback.after_report/after_exception``; V2's only
          failure class is ``TrainingFailedError``; a V2 worker reports through its
          ``TrainContext.report``.
2.47      ``RunConfig(worker_runtime_env=...)`` in V2.
2.49      ``WorkerGroupError``/``ControllerError`` (``TrainingFailedError`` is their
          ``Union`` until 2.51, a base class from 2.51); a V2 worker reports through its
          ``TrainFnUtils.report``.
2.50      ``CheckpointUploadMode``, ``get_all_reported_checkpoints``, ``ReportedCheckpoint``;
          ``report(validate_fn=, validate_config=)``; V2's own ``XGBoostConfig`` (V1's before);
          V2's own torch ``get_device``/``get_devices`` (V1's before); V2 picks the torch
          backend of a ``TorchConfig(backend=None)`` (only V2's TorchTrainer did before).
2.51      ``RAY_TRAIN_V2_ENABLED`` defaults to on; V2's torch ``get_device`` answers the local
          device outside a training worker (2.50's raises ``RuntimeError``).
2.52      V2 has its own ``CheckpointConfig`` (V1's before); the V1 form of
          ``LightGBMTrainer`` trains with LightGBM's data-parallel learner (serial before).
2.53      ``CheckpointConsistencyMode``.
2.55      ``ValidationConfig`` on the trainer and ``report(validation=...)`` replace
          ``validate_fn``; ``ReportedCheckpointStatus``.
2.51      ``ray.train.TrainingIterator`` removed.
2.56      ``ValidationTaskConfig.timeout_s``; ``RunConfig(logging_config=LoggingConfig())``;
          ``ray.train.lightgbm.normalize_pandas_for_lightgbm``; the V1 predictors
          (``TorchPredictor``, ``TorchDetectionPredictor``, ``XGBoostPredictor``,
          ``LightGBMPredictor``) removed.
2.58      ``PreemptionError``, ``PreemptionInfo``, ``get_preemption_info``.
2.60      ``NCCLHangError``.
========  ==================================================================================
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import types
from collections.abc import Callable
from enum import Enum
from importlib import metadata
from typing import TYPE_CHECKING, Any, Protocol

from packaging.version import Version

__all__ = [
    "CheckpointConsistencyMode",
    "CheckpointUploadMode",
    "LoggingConfig",
    "NCCLHangError",
    "PreemptionError",
    "PreemptionInfo",
    "ValidationConfig",
    "ValidationFn",
    "ValidationTaskConfig",
]

VERSION = Version(metadata.version("ray"))


def since(release: str) -> bool:
    """Whether the installed Ray is ``release`` or newer."""
    return VERSION >= Version(release)


V2_IS_DEFAULT = since("2.51")
"""Ray's own default for an unset ``RAY_TRAIN_V2_ENABLED``."""
REPORTED_CHECKPOINTS = since("2.50")
"""V2 has ``get_all_reported_checkpoints`` and the upload modes."""
CONSISTENCY_MODES = since("2.53")
"""V2's ``get_all_reported_checkpoints`` takes ``consistency_mode`` and ``timeout_s``."""
VALIDATION = since("2.56")
"""V2 validates checkpoints itself, with ``ValidationTaskConfig.timeout_s`` (2.55 lacks it).
Before it, compat validates in its run ledger, as it always does under V1."""
V2_DEVICE_NEEDS_WORKER = since("2.50") and not since("2.51")
"""V2's torch ``get_device``/``get_devices`` raise ``RuntimeError: TrainFnUtils has not been
initialized`` outside a training worker, so Ray Data's ``iter_torch_batches()`` (its
``device="auto"`` asks ``get_device``) fails in a validation task that runs with V2 on."""
UNSCORED_CHECKPOINTS_NEWEST = since("2.49")
"""V1's checkpoint manager appends a checkpoint whose metrics lack ``checkpoint_score_attribute``
(it ranks as the newest); before, it ranks it by a score of -inf, among the worst."""
FAILURE_FAMILIES = since("2.49")
"""V2 raises ``WorkerGroupError`` / ``ControllerError`` rather than one failure class."""
PREEMPTION = since("2.58")
LOGGING_CONFIG = since("2.56")
WORKER_RUNTIME_ENV = since("2.47")
HAS_V1_ENGINE = importlib.util.find_spec("ray.train._internal.backend_executor") is not None
"""Ray still ships its V1 engine (announced for deletion); without it compat's v1 backend
runs on the V2 engine (``COMPAT_V1_ENGINE``, docs/compatibility.md §28)."""
V2_XGBOOST_CONFIG = since("2.50")
"""V2's XGBoostTrainer takes its own ``ray.train.v2.xgboost.config.XGBoostConfig``."""
LIGHTGBM_NORMALIZE = since("2.56")
"""``ray.train.lightgbm.normalize_pandas_for_lightgbm`` exists."""
V1_LIGHTGBM_TRAINER = (
    "ray.train.lightgbm.lightgbm_trainer:LightGBMTrainer" if since("2.46") else "ray.train.lightgbm.v2:LightGBMTrainer"
)
"""V1's LightGBM trainer that takes a training function: before 2.46 ``ray.train.lightgbm``'s
own class has only the legacy ``params=``/``label_column=`` form, and the function form is
``ray.train.lightgbm.v2.LightGBMTrainer``."""
LIGHTGBM_DATA_PARALLEL = since("2.52")
"""Ray's own training function for the V1 form of ``LightGBMTrainer`` sets
``tree_learner="data_parallel"`` and ``pre_partition=True``; before, it leaves LightGBM's
defaults (the serial learner), and compat's V1 form trains as that release's Ray does."""
PANDAS_3 = since("2.55")
"""Ray Data's ``from_pandas`` works with pandas 3 (before, it raises ``AttributeError: ...
SettingWithCopyWarning``; use ``pandas<3`` with those releases)."""

RETIRED_NAMES: dict[str, tuple[str, ...]] = {
    "ray.train": ("TrainingIterator",),
    "ray.train.torch": ("TorchPredictor", "TorchDetectionPredictor"),
    "ray.train.xgboost": ("XGBoostPredictor",),
    "ray.train.lightgbm": ("LightGBMPredictor",),
}
"""Names older releases' modules export and newer ones removed; compat passes them through
where the installed Ray still has them, so it stays a drop-in there."""


def retired_names(module: str) -> dict[str, Any]:
    """Ray's objects for the :data:`RETIRED_NAMES` of ``module`` this Ray still exports."""
    ray_module = importlib.import_module(module)
    exported = set(getattr(ray_module, "__all__", ()))
    return {name: getattr(ray_module, name) for name in RETIRED_NAMES.get(module, ()) if name in exported}


def export_retired(namespace: dict[str, Any], module: str, names: list[str]) -> list[str]:
    """Bind in ``namespace`` (a compat module's globals) the :func:`retired_names` of the Ray
    ``module`` it stands in for; returns its ``__all__`` (``names``) with them."""
    retired = retired_names(module)
    namespace.update(retired)
    return sorted([*names, *retired])


if TYPE_CHECKING or VERSION >= Version("2.60"):  # mypy reads the newest release's names
    from ray.train.v2.api.config import LoggingConfig
    from ray.train.v2.api.exceptions import NCCLHangError, PreemptionError
    from ray.train.v2.api.preemption import PreemptionInfo
    from ray.train.v2.api.report_config import CheckpointConsistencyMode, CheckpointUploadMode
    from ray.train.v2.api.validation_config import ValidationConfig, ValidationFn, ValidationTaskConfig
else:
    if since("2.50"):
        from ray.train.v2.api.report_config import CheckpointUploadMode
    else:

        class CheckpointUploadMode(Enum):  # type: ignore[no-redef]
            """Ray 2.50's ``CheckpointUploadMode``; compat uploads synchronously before it."""

            ASYNC = "ASYNC"
            SYNC = "SYNC"
            NO_UPLOAD = "NO_UPLOAD"

            def default_delete_local_checkpoint_after_upload(self) -> bool:
                return self == CheckpointUploadMode.ASYNC

    if since("2.53"):
        from ray.train.v2.api.report_config import CheckpointConsistencyMode
    else:

        class CheckpointConsistencyMode(Enum):  # type: ignore[no-redef]
            """Ray 2.53's ``CheckpointConsistencyMode``."""

            COMMITTED = "COMMITTED"
            VALIDATED = "VALIDATED"

    if since("2.56"):
        from ray.train.v2.api.validation_config import ValidationConfig, ValidationFn, ValidationTaskConfig
    else:

        class ValidationFn(Protocol):  # type: ignore[no-redef]
            """A checkpoint validation function: ``fn(checkpoint, **fn_kwargs) -> dict``."""

            def __call__(self, checkpoint: Any, **kwargs: Any) -> dict[str, Any]: ...

        @dataclasses.dataclass
        class ValidationTaskConfig:  # type: ignore[no-redef]
            """Ray 2.56's ``ValidationTaskConfig`` (compat runs the validation)."""

            fn_kwargs: dict[str, Any] | None = None
            timeout_s: float | None = None

            def __post_init__(self) -> None:
                if self.fn_kwargs is None:
                    self.fn_kwargs = {}

        class ValidationConfig:  # type: ignore[no-redef]
            """Ray 2.56's ``ValidationConfig`` (compat runs the validation)."""

            def __init__(
                self,
                fn: Callable[..., dict[str, Any]],
                task_config: ValidationTaskConfig | None = None,
                ray_remote_kwargs: dict[str, Any] | None = None,
            ) -> None:
                self.fn = fn
                self.task_config = task_config if task_config is not None else ValidationTaskConfig()
                self.ray_remote_kwargs = ray_remote_kwargs or {}

    if since("2.56"):
        from ray.train.v2.api.config import LoggingConfig
    else:

        @dataclasses.dataclass
        class LoggingConfig:  # type: ignore[no-redef]
            """Ray 2.56's ``LoggingConfig``; accepted and ignored by older releases."""

            log_level: str = "INFO"

            def __post_init__(self) -> None:
                valid = set(logging._nameToLevel)
                if not isinstance(self.log_level, str) or self.log_level.upper() not in valid:
                    raise ValueError(f"Invalid log_level: {self.log_level!r}. Must be one of: {sorted(valid)}.")
                self.log_level = self.log_level.upper()

    if since("2.58"):
        from ray.train.v2.api.exceptions import PreemptionError
        from ray.train.v2.api.preemption import PreemptionInfo
    else:

        class PreemptionError(RuntimeError):  # type: ignore[no-redef]
            """Ray 2.58's ``PreemptionError``; never raised by older releases."""

        @dataclasses.dataclass(frozen=True)
        class PreemptionInfo:  # type: ignore[no-redef]
            """Ray 2.58's ``PreemptionInfo``."""

            deadline_ms: int | None
            preempted_node_to_ranks: dict[str, list[int]]

    class NCCLHangError(RuntimeError):  # type: ignore[no-redef]
        """Ray 2.60's ``NCCLHangError``; never raised by older releases."""


def v2_failure_classes() -> tuple[type[BaseException] | None, type[BaseException], type[BaseException]]:
    """V2's ``(TrainingFailedError, WorkerGroupError, ControllerError)``. Before 2.49 V2 has
    one failure class and the two families are ``RuntimeError``; in 2.49 and 2.50
    ``TrainingFailedError`` is a ``Union`` of the two families, not a class (``None`` here)."""
    from ray.train.v2.api import exceptions

    if not FAILURE_FAMILIES:
        return exceptions.TrainingFailedError, RuntimeError, RuntimeError
    failed = exceptions.TrainingFailedError if isinstance(exceptions.TrainingFailedError, type) else None
    return failed, exceptions.WorkerGroupError, exceptions.ControllerError


def v2_report_owner() -> Any:
    """The object whose ``report`` method every V2 report in this worker goes through
    (``ray.train.report``, library callbacks and compat alike): the worker's
    ``TrainFnUtils`` from 2.49, its ``TrainContext`` before."""
    if since("2.49"):
        from ray.train.v2._internal.execution.train_fn_utils import get_train_fn_utils

        return get_train_fn_utils()
    return v2_train_context()


def v2_train_context() -> Any:
    """The V2 worker's internal ``TrainContext`` (storage, the persisted checkpoint)."""
    from ray.train.v2._internal.execution.context import get_train_context

    return get_train_context()


def v2_report_keywords(upload_mode: Any, validation: Any) -> dict[str, Any]:
    """The keywords of V2's ``ray.train.report`` this Ray takes, for compat's own report.
    Before 2.56 compat validates in its ledger and passes no validation to Ray."""
    keywords: dict[str, Any] = {}
    if REPORTED_CHECKPOINTS:
        keywords["checkpoint_upload_mode"] = upload_mode or CheckpointUploadMode.SYNC
    if VALIDATION:
        keywords["validation"] = validation
    return keywords


def v2_torch_utils() -> Any:
    """V2's torch ``train_loop_utils``. Before 2.50 it lacks ``get_device`` and
    ``get_devices`` and ``ray.train.torch`` gives V1's under V2: so does this namespace."""
    from ray.train.torch import train_loop_utils as v1
    from ray.train.v2.torch import train_loop_utils as v2

    if since("2.50"):
        return v2
    names = ("get_device", "get_devices")
    return types.SimpleNamespace(**{**vars(v2), **{name: getattr(v1, name) for name in names}})


def v2_backend_config(config: Any, use_gpu: bool) -> Any:
    """``config`` as V2's engine can start it. Before 2.50 V2's worker group cannot pick a
    torch backend itself (``TorchConfig(backend=None)`` fails with ``AttributeError:
    'WorkerGroup' object has no attribute 'num_gpus_per_worker'``) and V2's own TorchTrainer
    fills it in; compat fills it in the same way for every trainer."""
    if config is None or since("2.50"):
        return config
    from ray.train.torch.config import TorchConfig

    if not isinstance(config, TorchConfig) or config.backend:
        return config
    return dataclasses.replace(config, backend="nccl" if use_gpu else "gloo")


def v2_config_classes() -> tuple[type, type, type, type]:
    """V2's ``(CheckpointConfig, FailureConfig, RunConfig, ScalingConfig)``; before 2.52
    V2 used V1's ``CheckpointConfig``."""
    from ray.train.v2.api import config

    if since("2.52"):
        return config.CheckpointConfig, config.FailureConfig, config.RunConfig, config.ScalingConfig
    from ray.air.config import CheckpointConfig

    return CheckpointConfig, config.FailureConfig, config.RunConfig, config.ScalingConfig


def worker_group_placement_group(worker_group: Any) -> Any:
    """The placement group of a V2 worker group: its state's handle since 2.5x
    (``get_worker_group_state().placement_group_handle``), the state's own attribute before
    (2.44); None if neither is there."""
    state = (
        worker_group.get_worker_group_state()
        if hasattr(worker_group, "get_worker_group_state")
        else getattr(worker_group, "_worker_group_state", None)
    )
    handle = getattr(state, "placement_group_handle", None)
    if handle is not None:
        return handle.placement_group
    return getattr(state, "placement_group", None)


def expose_v2_names() -> None:
    """Let this process unpickle V2's objects even if its ``ray.train`` was imported with
    V2 off: a V2-mode ``ray.train`` sets ``__module__ = "ray.train"`` on V2's public classes,
    so a V2 worker pickles them as ``ray.train.<Name>``, which a V1-mode ``ray.train`` lacks
    (the failure arrives as a ``RaySystemError``). Only missing names are added."""
    import ray.train
    from ray.train.v2.api import exceptions

    names: dict[str, Any] = {
        name: getattr(exceptions, name)
        for name in ("ControllerError", "WorkerGroupError", "NCCLHangError", "PreemptionError")
        if hasattr(exceptions, name)
    }
    for name in __all__:
        value = globals()[name]
        if getattr(value, "__module__", "").startswith("ray."):  # Ray's class, not compat's stand-in
            names[name] = value
    for name, value in names.items():
        if not hasattr(ray.train, name):
            setattr(ray.train, name, value)


# -- Ray's private names: compat reaches each of them here, and only here (tests/test_layers.py
# fails on a private import of Ray anywhere else), so a release that moves one breaks this module.


def v1_session() -> Any:
    """V1's worker session module (``ray.train._internal.session``): ``get_session``,
    ``report``, ``get_checkpoint``, ``get_dataset_shard``, the functions V1's public ones call."""
    from ray.train._internal import session

    return session


def v1_train_coordinator() -> Callable[..., Any]:
    """What the Tune trainable of V1's ``BaseTrainer.as_trainable`` runs in a trial."""
    from ray.train.base_trainer import _train_coordinator_fn

    return _train_coordinator_fn


def set_v1_restore_path(trainer: Any, path: str, filesystem: Any) -> None:
    """What V1's ``Trainer.restore(path)`` sets on the trainer it builds: its ``fit()`` restores
    the Tune experiment at ``path``."""
    trainer._restore_path = path
    trainer._restore_storage_filesystem = filesystem


def v1_storage_context(parent: str, experiment: str, filesystem: Any) -> Any:
    """V1's ``StorageContext`` of an experiment directory (no trial directory), as Tune's
    callbacks are handed one."""
    from ray.train._internal.storage import StorageContext

    return StorageContext(parent, experiment_dir_name=experiment, storage_filesystem=filesystem, trial_dir_name="")


def tree_train_fn(framework: str) -> Callable[..., Any]:
    """The per-worker training function of the V1 form of ``XGBoostTrainer`` or
    ``LightGBMTrainer`` (``framework``: ``"xgboost"`` or ``"lightgbm"``)."""
    if framework == "xgboost":
        from ray.train.xgboost.xgboost_trainer import _xgboost_train_fn_per_worker

        return _xgboost_train_fn_per_worker
    from ray.train.lightgbm.lightgbm_trainer import _lightgbm_train_fn_per_worker

    return _lightgbm_train_fn_per_worker


def contains_tensor(value: Any) -> bool:
    """Ray's test of whether reported metrics hold a torch tensor (which Ray rejects)."""
    from ray.air._internal.torch_utils import contains_tensor as ray_contains_tensor

    return bool(ray_contains_tensor(value))


def v2_worker_group_callback() -> type:
    """The base class of a callback V2's controller tells of each worker group it starts."""
    from ray.train.v2._internal.execution.callback import WorkerGroupCallback

    return WorkerGroupCallback
