"""The functions a training function calls: ``report``, ``get_context``, ``get_checkpoint``,
``get_dataset_shard``. Each dispatches to the engine the driver selected for this run."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

from ray.train import Checkpoint

from compat import _checks as checks
from compat import _local
from compat._context import TrainContext
from compat_core import messages, switch
from compat_core.errors import CompatError, NotInTrainingFunctionError
from compat_core.integration.validation import SeedValidation, request_from_report, seed_request
from compat_core.migration import usage, v1_only
from compat_core.releases import adapters
from compat_core.releases.standins import CheckpointConsistencyMode, CheckpointUploadMode, ValidationTaskConfig
from compat_core.run import worker
from compat_core.semantics.result import ReportedCheckpoint
from compat_core.semantics.rounds import CheckpointStatus


def _session(name: str) -> worker.WorkerSession:
    session = worker.current()
    if session is None:
        raise NotInTrainingFunctionError(messages.NOT_IN_TRAINING_FUNCTION.format(name=name))
    return session


def _tune_function_session(name: str) -> Any:
    """In a Ray Tune function trainable (outside compat's workers), ``ray.train``'s functions as
    raw Ray has them in the same mode: under V1, Ray's V1 session module, whose functions report
    to Tune (recorded as the V1-only ``tune-trainable-train-api``); under V2, raw V2's
    ``DeprecationWarning`` (a ``V1OnlyWarning``, Ray's message first). None anywhere else:
    compat's worker session answers, or the call is a mistake."""
    if worker.current() is not None or not adapters.in_tune_function():
        return None
    if not switch.mode().keeps_every_report:
        raise usage.V1OnlyWarning(messages.train_api_in_tune(name, v1_only.message("tune-trainable-train-api")))
    usage.relied_on("tune-trainable-train-api", f"compat.{name}() in a Tune function trainable")
    return adapters.v1_session()


class _RaySessionFunction(NamedTuple):
    """Ray's own ``ray.train.<name>`` where Ray's session runs a training function, and the mode
    it answers in (a trainer of Ray's runs its own engine's semantics; local mode, the selected one)."""

    function: Callable[..., Any]
    mode: switch.Mode


def _ray_session_function(name: str) -> _RaySessionFunction | None:
    """Where a training function runs with Ray's session and not compat's, Ray's own
    ``ray.train.<name>``, which answers there as raw Ray's does; None anywhere else:
    - V2's local mode (``ScalingConfig(num_workers=0)``: the function runs in the driver's
      process, ``compat._local``);
    - a trainer of Ray's own, V1's or V2's, running a function that calls compat's (a codebase
      graduating module by module: the module that builds the trainer is on ``ray.train``, the
      training loop's still on compat; docs/compatibility.md §32)."""
    if worker.current() is not None:
        return None
    if _local.running():
        return _RaySessionFunction(_local.ray_function(name), switch.mode())
    generation = _rays_generation()
    if generation is None:
        return None
    function = adapters.rays_train_function(generation is switch.V2, name)
    if function is None:
        raise CompatError(messages.not_in_rays_v1_trainer(name))
    return _RaySessionFunction(function, switch.Mode(generation, generation))


def _rays_generation() -> switch.Generation | None:
    """The engine of Ray's that runs a training function in this process, outside compat's workers."""
    if adapters.in_rays_v2_worker():
        return switch.V2
    return switch.V1 if adapters.in_rays_v1_worker() else None


def report(
    metrics: dict[str, Any],
    checkpoint: Checkpoint | None = None,
    *,
    checkpoint_dir_name: str | None = None,
    checkpoint_upload_mode: CheckpointUploadMode | None = None,
    validation: bool | ValidationTaskConfig = False,
    validate_fn: Callable[..., dict[str, Any]] | None = None,
    validate_config: dict[str, Any] | None = None,
    delete_local_checkpoint_after_upload: bool | None = None,
    checkpoint_upload_fn: Callable[[Checkpoint, str], Checkpoint] | None = None,
) -> None:
    """Report metrics and optionally a checkpoint; a barrier: every worker must call it.

    V1 keeps every report of rank 0 (progress.csv, result.json, ``metrics_dataframe``);
    V2 keeps only rank 0's metrics attached to a checkpoint. Under both, compat also keeps
    every worker's metrics (``Result.worker_metrics_dataframe``).

    Validation (both forms run under both backends): ``validation=True`` or a
    ``ValidationTaskConfig`` with ``TorchTrainer(validation_config=...)``, or the older
    ``validate_fn=fn, validate_config={...}``. ``checkpoint_dir_name`` and
    ``checkpoint_upload_mode`` are V2 features; under v1 checkpoints upload synchronously
    into V1's ``checkpoint_00000N`` directories.

    A custom upload (V2's): ``checkpoint_upload_fn(checkpoint, checkpoint_dir_name)`` returns
    the persisted checkpoint; ``delete_local_checkpoint_after_upload`` removes the local
    directory once persisted. Passed to V2's engine (under v2 and V1 semantics on V2's
    engine); on V1's engine the deletion works and a custom upload function raises
    (docs/compatibility.md §31).
    """
    tune_session = _tune_function_session("report")
    if tune_session is not None:
        tune_session.report(metrics, checkpoint=checkpoint)
        return
    rays = _ray_session_function("report")
    if rays is not None:  # what was given, as given: Ray's report says what it does not take
        options = {
            "checkpoint_dir_name": checkpoint_dir_name,
            "checkpoint_upload_mode": checkpoint_upload_mode,
            "validation": validation or None,
            "validate_fn": validate_fn,
            "validate_config": validate_config,
            "delete_local_checkpoint_after_upload": delete_local_checkpoint_after_upload,
            "checkpoint_upload_fn": checkpoint_upload_fn,
        }
        rays.function(metrics, checkpoint=checkpoint, **{k: v for k, v in options.items() if v is not None})
        return
    session = _session("report")
    if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
        raise checks.ReportError(messages.bad_checkpoint(checkpoint))
    metrics = checks.check_metrics(metrics)
    request = request_from_report(
        validation,
        validate_fn,
        validate_config,
        has_checkpoint=checkpoint is not None,
        has_trainer_config=session.settings.has_validation_config,
    )
    if checkpoint_upload_fn is not None and not callable(checkpoint_upload_fn):
        raise TypeError(
            messages.takes(
                "report(checkpoint_upload_fn=...)",
                "a function (checkpoint, checkpoint_dir_name) -> Checkpoint",
                type(checkpoint_upload_fn).__name__,
            )
        )
    if checkpoint_upload_mode is not None and not isinstance(checkpoint_upload_mode, CheckpointUploadMode):
        raise TypeError(
            messages.takes(
                "report(checkpoint_upload_mode=...)", "a compat.CheckpointUploadMode", repr(checkpoint_upload_mode)
            )
        )
    if isinstance(request, SeedValidation):
        token = f"{session.attempt}-{session.rank}-{session.next_index}-{uuid.uuid4().hex}"
        # Blocking, so the function is stored before any validation task asks for it.
        session.settings.ledger.store_seed_validation(token, request)
        request = seed_request(token)
    # V2 validates in its controller; under v1 the ledger runs it once the checkpoint is persisted.
    validates_in_ledger = session.side.validates_in_ledger
    session.compat_call = worker.CompatCall(
        bool(request), request if validates_in_ledger and request else None, metrics=metrics
    )
    try:
        session.side.report(
            metrics,
            checkpoint,
            checkpoint_dir_name=checkpoint_dir_name,
            upload_mode=checkpoint_upload_mode,
            validation=False if validates_in_ledger else request,
            upload_fn=checkpoint_upload_fn,
            delete_local=delete_local_checkpoint_after_upload,
        )
    finally:
        session.compat_call = None


def get_context() -> TrainContext:
    """The worker's context (rank, world size, experiment name, storage)."""
    if _tune_function_session("get_context") is not None:
        from ray.train.context import get_context as v1_context

        return TrainContext(v1_context(), switch.mode())
    rays = _ray_session_function("get_context")
    if rays is not None:
        return TrainContext(rays.function(), rays.mode)
    session = _session("get_context")
    return TrainContext(session.side.context(), session.mode)


def get_checkpoint() -> Checkpoint | None:
    """The checkpoint to resume from, or None."""
    tune_session = _tune_function_session("get_checkpoint")
    if tune_session is not None:
        return tune_session.get_checkpoint()
    rays = _ray_session_function("get_checkpoint")
    if rays is not None:
        return rays.function()
    return _session("get_checkpoint").side.get_checkpoint()


def get_all_reported_checkpoints(
    consistency_mode: CheckpointConsistencyMode = CheckpointConsistencyMode.VALIDATED,
    timeout_s: float | None = None,
) -> list[ReportedCheckpoint]:
    """Every checkpoint reported so far in this run, oldest first, with its metrics
    (validated metrics merged) and status. Waits until the reports already made are
    processed and, with ``CheckpointConsistencyMode.VALIDATED`` (the default), until their
    validations finished; ``timeout_s`` bounds the wait. Ray's own under v2; compat's
    ledger answers under v1, which has no such call."""
    if not isinstance(consistency_mode, CheckpointConsistencyMode):
        raise TypeError(
            messages.takes(
                "get_all_reported_checkpoints(consistency_mode=...)",
                "compat.CheckpointConsistencyMode.COMMITTED or .VALIDATED",
                repr(consistency_mode),
            )
        )
    rays = _ray_session_function("get_all_reported_checkpoints")
    if rays is not None:
        return rays.function(consistency_mode, timeout_s)
    session = _session("get_all_reported_checkpoints")
    validated = consistency_mode is CheckpointConsistencyMode.VALIDATED
    found = session.side.reported_checkpoints(session, validated, timeout_s)
    return [ReportedCheckpoint(c, m, CheckpointStatus(s)) for c, m, s in found]


def get_preemption_info() -> Any:
    """V2's notice that a node of this run is about to be preempted (a
    ``compat.PreemptionInfo``), or None; a barrier, as in V2. Always None under v1, which
    has no such notice (a preempted node shows up as a worker failure)."""
    rays = _ray_session_function("get_preemption_info")
    if rays is not None:
        return rays.function()
    session = _session("get_preemption_info")
    return session.side.preemption_info()


def get_dataset_shard(dataset_name: str | None = None) -> Any:
    """This worker's shard of ``TorchTrainer(datasets={dataset_name: ...})``."""
    rays = _ray_session_function("get_dataset_shard")
    if rays is not None:
        return rays.function(dataset_name)
    return _session("get_dataset_shard").side.get_dataset_shard(dataset_name)
