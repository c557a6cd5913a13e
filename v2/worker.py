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

import inspect
import sys
from collections.abc import Callable
from typing import Any

from compat_core import config, settings
from compat_core.files.storage import checkpoint_dir_name as dir_name_of
from compat_core.integration.patch import override_method, rebind, undo_all
from compat_core.releases import adapters, facts, standins
from compat_core.run.engine import EngineReport, ReportSink
from compat_core.run.worker import ledger_reported_checkpoints, reported_metrics
from compat_core.switch import Mode

RAY_ROUNDS_ENV_VAR = settings.V2_RAY_ROUNDS.name


def rounds_through_ray() -> bool:
    return settings.V2_RAY_ROUNDS.get()


class V2WorkerSide:
    """Inside a worker of Ray's V2 engine (V1's semantics on it: :class:`v2.v1_on_v2.V1OnV2WorkerSide`)."""

    amp_helpers = False

    def __init__(self, mode: Mode) -> None:
        self.round_vote: Callable[[bool], bool] | None = None  # set by start()
        # V2 validates in its controller from Ray 2.56; before, compat's ledger does.
        self.validates_in_ledger = not facts.VALIDATION
        self.resume_from: Any = None  # Trainer(resume_from_checkpoint=...), from start()

    def start(self, session: Any) -> None:
        self.round_vote = session.vote_free_round
        self.resume_from = session.settings.resume_from_checkpoint

    def torch_utils(self) -> Any:
        return standins.v2_torch_utils()

    def rank_and_size(self) -> tuple[int, int]:
        context = self.context()
        return context.get_world_rank(), context.get_world_size()

    def worker_group(self) -> str | None:
        return adapters.v2_worker_group_id()

    def install(self, sink: ReportSink) -> Callable[[], None]:
        import ray.train
        from ray.train.v2.api import train_fn_utils as api

        owner = adapters.v2_report_owner()
        original = owner.report
        signature = inspect.signature(original)
        direct = not rounds_through_ray()

        def report(*args: Any, **kwargs: Any) -> None:
            # Ray's own signature (it changed across releases) names the arguments.
            call = signature.bind(*args, **kwargs)
            call.apply_defaults()
            given = call.arguments
            metrics, checkpoint = given["metrics"], given.get("checkpoint")
            validation = given.get("validation") or given.get("validate_fn") or False
            upload_mode = given.get("checkpoint_upload_mode")
            submitted, checked = reported_metrics(metrics)
            if direct and self.round_vote is not None:
                # compat's report() refuses torch objects: only Ray's own report needs the look.
                free = checkpoint is None and not validation and (checked or not _has_tensor(metrics))
                if self.round_vote(free) and free:
                    sink(EngineReport(submitted, False))  # no rank passed a checkpoint: V2 keeps nothing
                    self._after_report(False)
                    return
            context: Any = adapters.v2_train_context()
            name = given.get("checkpoint_dir_name") or self._default_checkpoint_dir_name(context)
            given["checkpoint_dir_name"] = name
            original(*call.args, **call.kwargs)
            if checkpoint is not None or direct:
                self._checkpoint_round_reached_ray()
            persisted = None
            if checkpoint is not None:
                if upload_mode is not None and upload_mode.name == "NO_UPLOAD":
                    persisted = checkpoint
                elif (upload_mode is None or upload_mode.name == "SYNC") and context.checkpoint is not None:
                    persisted = context.checkpoint
                    name = dir_name_of(persisted)  # the name rank 0 decided
            sink(EngineReport(submitted, checkpoint is not None, persisted, name, validation))
            self._after_report(checkpoint is not None)

        unwrap = override_method(owner, "report", report)

        # A worker process may have imported ray.train while the switch said V1.
        public = ("report", "get_checkpoint", "get_dataset_shard", "get_context", "get_all_reported_checkpoints")
        functions = {name: getattr(api, name) for name in public if hasattr(api, name)}
        names = rebind(ray.train, {**functions, "get_checkpoint": self.get_checkpoint})
        return undo_all([unwrap, names])

    def _default_checkpoint_dir_name(self, context: Any) -> str:
        """The name Ray would give a checkpoint the caller did not name."""
        return str(context.storage_context.make_default_checkpoint_dir_name())

    def _checkpoint_round_reached_ray(self) -> None:
        """A round that carried a checkpoint went through Ray's report."""

    def _after_report(self, with_checkpoint: bool) -> None:
        """This worker's report was handed on (to Ray, or kept by compat alone)."""

    def report(
        self,
        metrics: dict[str, Any],
        checkpoint: Any,
        *,
        checkpoint_dir_name: str | None,
        upload_mode: Any,
        validation: Any,
        upload_fn: Any = None,
        delete_local: bool | None = None,
    ) -> None:
        from ray.train.v2.api.train_fn_utils import report as v2_report

        for name, value in (
            ("checkpoint_upload_fn", upload_fn),
            ("delete_local_checkpoint_after_upload", delete_local),
        ):
            if value is not None:
                config.require_parameter(v2_report, f"report({name}=...)", name)
        v2_report(
            metrics,  # report()'s own copy: the hook records it as it is
            checkpoint=checkpoint,
            checkpoint_dir_name=checkpoint_dir_name,
            **standins.v2_report_keywords(upload_mode, validation, upload_fn, delete_local),
        )

    def context(self) -> Any:
        from ray.train.v2.api.train_fn_utils import get_context

        return get_context()

    def finish(self) -> None:
        """Nothing to do when the training function ends (V1's artifacts: V1OnV2WorkerSide)."""

    def reported_checkpoints(self, session: Any, validated: bool, timeout_s: float | None) -> list[Any]:
        if self.validates_in_ledger:  # validation outcomes (and, before 2.50, the list) live in the ledger
            return ledger_reported_checkpoints(session, validated, timeout_s)
        from ray.train.v2.api.train_fn_utils import get_all_reported_checkpoints

        modes = standins.CheckpointConsistencyMode
        mode = modes.VALIDATED if validated else modes.COMMITTED
        found = get_all_reported_checkpoints(consistency_mode=mode, timeout_s=timeout_s)
        return [(r.checkpoint, dict(r.metrics), r.status.value) for r in found]

    def preemption_info(self) -> Any:
        if not facts.PREEMPTION:
            return None  # no preemption notice before Ray 2.58; a preempted node is a worker failure
        from ray.train.v2.api.train_fn_utils import get_preemption_info

        return get_preemption_info()

    def get_checkpoint(self) -> Any:
        """The run's latest checkpoint (a retried attempt's, or the stored run's that this
        run resumes), else ``Trainer(resume_from_checkpoint=...)``'s, as V1 gives them."""
        from ray.train.v2.api.train_fn_utils import get_checkpoint

        found = get_checkpoint()
        return found if found is not None else self.resume_from

    def get_dataset_shard(self, dataset_name: str | None) -> Any:
        from ray.train.v2.api.train_fn_utils import get_dataset_shard

        return get_dataset_shard(dataset_name)


def _has_tensor(metrics: dict[str, Any]) -> bool:
    """Ray rejects torch tensors in metrics; such a report goes to Ray to get its error."""
    if "torch" not in sys.modules:
        return False
    return adapters.contains_tensor(metrics)
