"""The functions a training function calls: ``report``, ``get_context``, ``get_checkpoint``,
``get_dataset_shard``. Each dispatches to the engine the driver selected for this run."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import ray
from ray.train import Checkpoint
from ray.train.v2.api.report_config import CheckpointUploadMode
from ray.train.v2.api.validation_config import ValidationTaskConfig

from compat import _checks, _messages, _usage, _validation, _worker
from compat._context import TrainContext
from compat._ledger import Record


class NotInTrainingFunctionError(RuntimeError):
    """A worker-only function was called on the driver."""


def _session(name: str) -> _worker.WorkerSession:
    session = _worker.current()
    if session is None:
        raise NotInTrainingFunctionError(_messages.NOT_IN_TRAINING_FUNCTION.format(name=name))
    return session


def report(
    metrics: dict[str, Any],
    checkpoint: Checkpoint | None = None,
    *,
    checkpoint_dir_name: str | None = None,
    checkpoint_upload_mode: CheckpointUploadMode | None = None,
    validation: bool | ValidationTaskConfig = False,
    validate_fn: Callable[..., dict[str, Any]] | None = None,
    validate_config: dict[str, Any] | None = None,
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
    """
    session = _session("report")
    if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
        raise _checks.ReportError(_messages.bad_checkpoint(checkpoint))
    metrics = _checks.check_metrics(metrics, non_finite_ok=_checks.allow_non_finite())
    request = _validation.request_from_report(
        validation,
        validate_fn,
        validate_config,
        has_checkpoint=checkpoint is not None,
        has_trainer_config=session.settings.has_validation_config,
    )
    if checkpoint_upload_mode is not None and not isinstance(checkpoint_upload_mode, CheckpointUploadMode):
        raise TypeError(
            f"report(checkpoint_upload_mode=...) takes a compat.CheckpointUploadMode, got {checkpoint_upload_mode!r}."
        )
    if isinstance(request, _validation.SeedValidation):
        token = f"{session.rank}-{session.next_index}-{uuid.uuid4().hex}"
        # Blocking, so the function is stored before any validation task asks for it.
        ray.get(session.settings.ledger.store_seed_validation.remote(token, request))
        request = _validation.seed_request(token)
    if checkpoint is None and metrics and session.rank == 0:
        _usage.relied_on("free-floating-report", backend=session.backend)

    index = session.next_index
    session.next_index += 1
    if session.backend == "v2":
        persisted, dir_name = _report_v2(metrics, checkpoint, checkpoint_dir_name, checkpoint_upload_mode, request)
    else:
        persisted, dir_name = _report_v1(metrics, checkpoint)
    record = Record(
        rank=session.rank,
        index=index,
        metrics=metrics,
        has_checkpoint=checkpoint is not None,
        wants_validation=bool(request),
        timestamp=_worker.now(),
        checkpoint=persisted,
        checkpoint_dir_name=dir_name,
    )
    validation_job = None
    if session.backend == "v1" and request and persisted is not None:
        validation_job = (persisted, request)
    session.settings.ledger.record.remote(record, validation_job)


def _report_v2(
    metrics: dict[str, Any],
    checkpoint: Checkpoint | None,
    checkpoint_dir_name: str | None,
    upload_mode: CheckpointUploadMode | None,
    request: _validation.ValidationRequest,
) -> tuple[None, str | None]:
    from ray.train.v2.api.train_fn_utils import report as v2_report

    v2_report(
        dict(metrics),
        checkpoint=checkpoint,
        checkpoint_dir_name=checkpoint_dir_name,
        checkpoint_upload_mode=upload_mode or CheckpointUploadMode.SYNC,
        validation=request,
    )
    return None, checkpoint_dir_name


def _report_v1(metrics: dict[str, Any], checkpoint: Checkpoint | None) -> tuple[Checkpoint | None, str | None]:
    from ray.train._internal.session import get_session
    from ray.train._internal.session import report as v1_report

    v1_report(dict(metrics), checkpoint=checkpoint)
    if checkpoint is None:
        return None, None
    storage = get_session().storage  # type: ignore[union-attr]  # inside a V1 worker
    persisted = Checkpoint(path=storage.checkpoint_fs_path, filesystem=storage.storage_filesystem)
    return persisted, storage.checkpoint_dir_name


def get_context() -> TrainContext:
    """The worker's context (rank, world size, experiment name, storage)."""
    session = _session("get_context")
    if session.backend == "v2":
        from ray.train.v2.api.train_fn_utils import get_context as v2_context

        return TrainContext(v2_context(), session.backend)
    from ray.train.context import get_context as v1_context

    return TrainContext(v1_context(), session.backend)


def get_checkpoint() -> Checkpoint | None:
    """The checkpoint to resume from, or None."""
    session = _session("get_checkpoint")
    if session.backend == "v2":
        from ray.train.v2.api.train_fn_utils import get_checkpoint as v2_get

        return v2_get()
    from ray.train._internal.session import get_checkpoint as v1_get

    return v1_get()


def get_dataset_shard(dataset_name: str | None = None) -> Any:
    """This worker's shard of ``TorchTrainer(datasets={dataset_name: ...})``."""
    session = _session("get_dataset_shard")
    if session.backend == "v2":
        from ray.train.v2.api.train_fn_utils import get_dataset_shard as v2_shard

        return v2_shard(dataset_name)
    from ray.train._internal.session import get_dataset_shard as v1_shard

    return v1_shard(dataset_name)
