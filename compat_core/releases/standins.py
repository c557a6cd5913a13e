"""Ray's public names that differ by release: Ray's own where the installed release has them,
compat's stand-in where it does not (each says the release it stands in for), and the release
differences of public classes and modules compat reads (:mod:`compat_core.releases.facts`
says which release has what)."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import types
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from packaging.version import Version
from ray.air.config import ScalingConfig as _V1ScalingConfig

from compat_core.releases.facts import (
    FAILURE_FAMILIES,
    REPORTED_CHECKPOINTS,
    RETIRED_NAMES,
    V2_READS_RUNS,
    VALIDATION,
    VERSION,
    since,
)

__all__ = [
    "CheckpointConsistencyMode",
    "CheckpointUploadMode",
    "LoggingConfig",
    "NCCLHangError",
    "PreemptionError",
    "PreemptionInfo",
    "ReportedCheckpointStatus",
    "ValidationConfig",
    "ValidationFn",
    "ValidationTaskConfig",
]


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
    from ray.train.v2.api.reported_checkpoint import ReportedCheckpointStatus
    from ray.train.v2.api.validation_config import ValidationConfig, ValidationFn, ValidationTaskConfig
else:
    if since("2.56"):
        from ray.train.v2.api.reported_checkpoint import ReportedCheckpointStatus
    else:

        class ReportedCheckpointStatus(Enum):  # type: ignore[no-redef]
            """Ray 2.56's ``ReportedCheckpointStatus`` (compat's runs give it before)."""

            COMMITTED = "COMMITTED"
            PENDING_VALIDATION = "PENDING_VALIDATION"
            VALIDATED = "VALIDATED"
            VALIDATION_TIMEOUT = "VALIDATION_TIMEOUT"
            VALIDATION_FAILED = "VALIDATION_FAILED"

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


V2_SNAPSHOT = "checkpoint_manager_snapshot.json"
"""V2's checkpoint manager's record of a run's checkpoints, in the run's directory (every release)."""


def v2_result_from_path(run_dir: str, filesystem: Any) -> Any:
    """V2's ``Result.from_path`` of the run directory ``run_dir`` (a path on ``filesystem``):
    Ray's own from 2.52; before, where Ray's raises ``NotImplementedError``, compat's
    :func:`v2_result_from_snapshot`."""
    from ray.train.v2.api.result import Result

    if V2_READS_RUNS:
        return Result.from_path(run_dir, storage_filesystem=filesystem)
    return v2_result_from_snapshot(run_dir, filesystem)


def v2_result_from_snapshot(run_dir: str, filesystem: Any) -> Any:
    """The ``Result`` Ray 2.52's V2 ``Result.from_path`` builds, from the same checkpoint manager
    snapshot (its form is the same from 2.44 to 2.60): the latest checkpoint and its metrics, the
    kept checkpoints in the manager's order, their metrics as ``metrics_dataframe``. It writes
    nothing (Ray's writes a storage marker into the run's directory as it reads). The caller
    checked the snapshot exists; a corrupt one raises what Ray's checkpoint manager raises."""
    import json
    import posixpath

    import pandas as pd
    from ray.train import Checkpoint
    from ray.train.v2.api.result import Result

    from compat_core.releases.adapters import v2_snapshot_error

    try:
        with filesystem.open_input_stream(posixpath.join(run_dir, V2_SNAPSHOT)) as stream:
            state = json.loads(bytes(stream.read()))
        kept = [(record["checkpoint_dir_name"], dict(record["metrics"])) for record in state["checkpoint_results"]]
        latest = state["latest_checkpoint_result"]
        latest = (latest["checkpoint_dir_name"], dict(latest["metrics"])) if latest is not None else None
    except (ValueError, KeyError, TypeError) as error:  # as Ray's checkpoint manager reports it
        raise v2_snapshot_error()(repr(error)) from error

    def checkpoint(name: str) -> Any:
        return Checkpoint(path=posixpath.join(run_dir, name), filesystem=filesystem)

    best = [(checkpoint(name), metrics) for name, metrics in kept]
    return Result(
        metrics=latest[1] if latest else None,
        checkpoint=checkpoint(latest[0]) if latest else None,
        error=None,
        path=run_dir,
        best_checkpoints=best,
        metrics_dataframe=pd.DataFrame([metrics for _, metrics in best]) if best else None,
        _storage_filesystem=filesystem,
    )


def v2_report_keywords(
    upload_mode: Any, validation: Any, upload_fn: Any = None, delete_local: bool | None = None
) -> dict[str, Any]:
    """The keywords of V2's ``ray.train.report`` this Ray takes, for compat's own report.
    Before 2.56 compat validates in its ledger and passes no validation to Ray. A custom
    upload (``checkpoint_upload_fn``, ``delete_local_checkpoint_after_upload``) is passed
    when given (the caller checked this Ray's report takes it: ``config.require_parameter``)."""
    keywords: dict[str, Any] = {}
    if REPORTED_CHECKPOINTS:
        keywords["checkpoint_upload_mode"] = upload_mode or CheckpointUploadMode.SYNC
    if VALIDATION:
        keywords["validation"] = validation
    given = {"checkpoint_upload_fn": upload_fn, "delete_local_checkpoint_after_upload": delete_local}
    keywords.update({name: value for name, value in given.items() if value is not None})
    return keywords


class NoTrainerCPU(_V1ScalingConfig):
    """Ray's V1 ``ScalingConfig`` whose trainer actor reserves no CPU (V1 reserves one: 2
    workers would wait forever on 2 cores; V2's controller reserves none, and compat does the
    same by default), without setting ``trainer_resources``: Ray's deprecation warning about
    that option, in the driver and in the trial's actor, is for users who set it."""

    @property
    def _trainer_resources_not_none(self) -> dict[str, float]:
        return {}


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


def ray_bases(v2: type, v1: type) -> tuple[type, ...]:
    """The bases of compat's class standing for Ray's ``v2`` (V2's) and ``v1`` (V1's) class of
    one name: V2's, and V1's too where V2's is not already a subclass of it (Ray 2.60's
    ``ScalingConfig``, ``FailureConfig`` and ``Result`` are; its ``RunConfig`` and
    ``CheckpointConfig`` are not; Ray 2.44's ``CheckpointConfig`` is V1's in both). An instance
    is then one of ``ray.train.<Name>`` whichever setting ``ray.train`` was imported under."""
    return (v2,) if issubclass(v2, v1) else (v2, v1)


def reported_checkpoint_bases() -> tuple[type, ...]:
    """The bases of compat's ``ReportedCheckpoint``: Ray's (2.50+), else none."""
    if not REPORTED_CHECKPOINTS:
        return ()
    from ray.train.v2.api.reported_checkpoint import ReportedCheckpoint

    return (ReportedCheckpoint,)


def ray_config_bases(name: str) -> tuple[type, ...]:
    """:func:`ray_bases` of Ray's config class ``name`` (``RunConfig``, ``ScalingConfig``, ...)."""
    from ray.air import config as v1

    names = ("CheckpointConfig", "FailureConfig", "RunConfig", "ScalingConfig")
    v2 = dict(zip(names, v2_config_classes(), strict=True))[name]
    return ray_bases(v2, getattr(v1, name))


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


def node_ip() -> str:
    """This process's node IP as Ray knows it (loopback outside Ray)."""
    try:
        import ray

        return str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]  # untyped in Ray
    except Exception:
        return "127.0.0.1"
