"""The v2 backend inside a training worker: Ray's V2 train-fn utilities, every report observed.

Every V2 report, whatever called it, goes through the worker's ``TrainFnUtils.report``
(Ray documents the object as the place to patch API behaviour). compat wraps that method
on the worker's instance. It names the checkpoint directory itself when the caller did not
(exactly as Ray would, with the storage context's default name), so the directory of every
checkpoint round is known and validation outcomes can be matched to rounds by name.

A round in which no rank passes a checkpoint carries nothing V2 keeps, yet Ray makes every
worker wait for its controller's poll to deliver it. compat delivers such a round itself,
through the ledger (which also runs ``after_report`` for every round, in order): each rank
tells the ledger whether its report is free and the free ones wait for the others' answers
(a barrier, as V2's report is). If any rank passes a checkpoint (the "only rank 0 uploads"
pattern), the whole round goes through Ray. ``COMPAT_V2_RAY_ROUNDS=1`` sends every round
through Ray's controller.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from compat._backend import EngineReport, ReportSink
from compat._patch import override_method, rebind, undo_all
from compat._storage import checkpoint_dir_name as dir_name_of

RAY_ROUNDS_ENV_VAR = "COMPAT_V2_RAY_ROUNDS"


def rounds_through_ray() -> bool:
    return os.environ.get(RAY_ROUNDS_ENV_VAR, "").lower() in ("1", "true")


class V2WorkerSide:
    name = "v2"
    validates_in_ledger = False

    def torch_utils(self) -> Any:
        from ray.train.v2.torch import train_loop_utils

        return train_loop_utils

    def rank_and_size(self) -> tuple[int, int]:
        context = self.context()
        return context.get_world_rank(), context.get_world_size()

    def __init__(self) -> None:
        self.round_vote: Callable[[bool], bool] | None = None  # set by the worker session

    def install(self, sink: ReportSink) -> Callable[[], None]:
        import ray.train
        from ray.train.v2._internal.execution.context import get_train_context
        from ray.train.v2._internal.execution.train_fn_utils import get_train_fn_utils
        from ray.train.v2.api import train_fn_utils as api
        from ray.train.v2.api.report_config import CheckpointUploadMode

        utils: Any = get_train_fn_utils()
        original = utils.report
        direct = not rounds_through_ray()

        def report(
            metrics: dict[str, Any],
            checkpoint: Any = None,
            checkpoint_dir_name: str | None = None,
            checkpoint_upload_mode: Any = CheckpointUploadMode.SYNC,
            delete_local_checkpoint_after_upload: bool | None = None,
            checkpoint_upload_fn: Any = None,
            validation: Any = False,
        ) -> None:
            submitted = dict(metrics)
            if direct and self.round_vote is not None:
                free = checkpoint is None and not validation and not _has_tensor(metrics)
                if self.round_vote(free) and free:
                    sink(EngineReport(submitted, False))  # no rank passed a checkpoint: V2 keeps nothing
                    return
            context: Any = get_train_context()
            name = checkpoint_dir_name or context.storage_context.make_default_checkpoint_dir_name()
            original(
                metrics,
                checkpoint,
                name,
                checkpoint_upload_mode,
                delete_local_checkpoint_after_upload,
                checkpoint_upload_fn,
                validation,
            )
            persisted = None
            if checkpoint is not None:
                if checkpoint_upload_mode == CheckpointUploadMode.NO_UPLOAD:
                    persisted = checkpoint
                elif checkpoint_upload_mode == CheckpointUploadMode.SYNC and context.checkpoint is not None:
                    persisted = context.checkpoint
                    name = dir_name_of(persisted)  # the name rank 0 decided
            sink(EngineReport(submitted, checkpoint is not None, persisted, name, validation))

        unwrap = override_method(utils, "report", report)

        # A worker process may have imported ray.train while the switch said V1.
        names = rebind(
            ray.train,
            {
                "report": api.report,
                "get_checkpoint": api.get_checkpoint,
                "get_dataset_shard": api.get_dataset_shard,
                "get_context": api.get_context,
                "get_all_reported_checkpoints": api.get_all_reported_checkpoints,
            },
        )
        return undo_all([unwrap, names])

    def report(
        self,
        metrics: dict[str, Any],
        checkpoint: Any,
        *,
        checkpoint_dir_name: str | None,
        upload_mode: Any,
        validation: Any,
    ) -> None:
        from ray.train.v2.api.report_config import CheckpointUploadMode
        from ray.train.v2.api.train_fn_utils import report as v2_report

        v2_report(
            dict(metrics),
            checkpoint=checkpoint,
            checkpoint_dir_name=checkpoint_dir_name,
            checkpoint_upload_mode=upload_mode or CheckpointUploadMode.SYNC,
            validation=validation,
        )

    def context(self) -> Any:
        from ray.train.v2.api.train_fn_utils import get_context

        return get_context()

    def reported_checkpoints(self, session: Any, validated: bool, timeout_s: float | None) -> list[Any]:
        from ray.train.v2.api.report_config import CheckpointConsistencyMode
        from ray.train.v2.api.train_fn_utils import get_all_reported_checkpoints

        mode = CheckpointConsistencyMode.VALIDATED if validated else CheckpointConsistencyMode.COMMITTED
        found = get_all_reported_checkpoints(consistency_mode=mode, timeout_s=timeout_s)
        return [(r.checkpoint, dict(r.metrics), r.status.value) for r in found]

    def preemption_info(self) -> Any:
        from ray.train.v2.api.train_fn_utils import get_preemption_info

        return get_preemption_info()

    def get_checkpoint(self) -> Any:
        from ray.train.v2.api.train_fn_utils import get_checkpoint

        return get_checkpoint()

    def get_dataset_shard(self, dataset_name: str | None) -> Any:
        from ray.train.v2.api.train_fn_utils import get_dataset_shard

        return get_dataset_shard(dataset_name)


def _has_tensor(metrics: dict[str, Any]) -> bool:
    """Ray rejects torch tensors in metrics; such a report goes to Ray to get its error."""
    if "torch" not in sys.modules:
        return False
    from ray.air._internal.torch_utils import contains_tensor

    return bool(contains_tensor(metrics))
