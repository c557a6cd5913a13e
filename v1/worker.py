"""The v1 backend inside a training worker: Ray's V1 session, with every report observed.

Every V1 report, whatever called it (``compat.report``, ``ray.train.report``,
``ray.air.session.report``, Lightning's or Transformers' ``RayTrainReportCallback``), ends
in the worker's ``_TrainSession.report``; compat wraps that one method on the worker's
session object, so each report is recorded once, after Ray persisted its checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat_core import messages
from compat_core.errors import CompatError
from compat_core.files.storage import checkpoint_dir_name
from compat_core.integration.patch import override_method, rebind, undo_all
from compat_core.releases import adapters
from compat_core.run.engine import EngineReport, ReportSink
from compat_core.run.worker import ledger_reported_checkpoints, reported_metrics


class V1WorkerSide:
    """Inside a worker of Ray's V1 engine."""

    validates_in_ledger = True
    amp_helpers = True

    def start(self, session: Any) -> None:
        """V1's session answers everything itself; a restored run's latest checkpoint, which
        the driver did not hand Ray as ``resume_from_checkpoint`` (compat chose it, not the
        user), is where an attempt with no checkpoint of its own starts, for every door of
        ``get_checkpoint()``."""
        first = session.settings.resume_from_checkpoint
        if first is None:
            return
        ray_session: Any = adapters.v1_session().get_session()
        if ray_session is not None and ray_session.loaded_checkpoint is None:
            ray_session.loaded_checkpoint = first

    def torch_utils(self) -> Any:
        from ray.train.torch import train_loop_utils

        return train_loop_utils

    def rank_and_size(self) -> tuple[int, int]:
        context = self.context()
        return context.get_world_rank(), context.get_world_size()

    def worker_group(self) -> str | None:
        return None  # V1 restarts every rank of one fixed size: an attempt is a rank's restart

    def install(self, sink: ReportSink) -> Callable[[], None]:
        import ray.train
        from ray.train import context as v1_context

        v1_session = adapters.v1_session()
        session: Any = v1_session.get_session()
        original = session.report

        def report(metrics: dict[str, Any], checkpoint: Any = None) -> None:
            submitted, _ = reported_metrics(metrics)  # what the caller passed, before V1's auto-filled keys
            original(metrics, checkpoint=checkpoint)
            if getattr(session, "ignore_report", False):
                return  # reporting was paused: Ray dropped this report, so there is nothing to record
            persisted, dir_name = None, None
            if checkpoint is not None:
                # V1's report hands the checkpoint it persisted to the session, for get_checkpoint().
                persisted = session.loaded_checkpoint
                dir_name = checkpoint_dir_name(persisted)
            sink(EngineReport(submitted, checkpoint is not None, persisted, dir_name))

        unwrap = override_method(session, "report", report)

        # A worker process may have imported ray.train while the switch said V2.
        names = rebind(
            ray.train,
            {
                "report": v1_session.report,
                "get_checkpoint": v1_session.get_checkpoint,
                "get_dataset_shard": v1_session.get_dataset_shard,
                "get_context": v1_context.get_context,
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
        upload_fn: Any = None,
        delete_local: bool | None = None,
    ) -> None:
        # V1 names its own checkpoint directories and uploads synchronously; validation
        # runs in compat's ledger (see compat_core.run.worker).
        if upload_fn is not None:
            feature = "report(checkpoint_upload_fn=...)"
            raise CompatError(messages.needs_v2_engine(feature, "a custom checkpoint upload"))
        sessions = adapters.v1_session()
        sessions.report(metrics, checkpoint=checkpoint)  # report()'s own copy (V1 fills in a copy of it)
        if delete_local and checkpoint is not None:
            # As V2's: the local directory goes once the checkpoint is persisted (V1's report
            # copied it into the trial directory before returning).
            persisted = sessions.get_session().loaded_checkpoint
            if persisted is None or persisted.path != checkpoint.path:
                checkpoint.filesystem.delete_dir(checkpoint.path)

    def context(self) -> Any:
        from ray.train.context import get_context

        return get_context()

    def finish(self) -> None:
        pass

    def reported_checkpoints(self, session: Any, validated: bool, timeout_s: float | None) -> list[Any]:
        """V1 has no such call: compat's ledger answers from the rounds it recorded, with
        V1's retention (``num_to_keep`` by score) applied."""
        return ledger_reported_checkpoints(session, validated, timeout_s)

    def preemption_info(self) -> Any:
        return None  # V1 has no preemption notice; a preempted node is a worker failure

    def get_checkpoint(self) -> Any:
        return adapters.v1_session().get_checkpoint()

    def get_dataset_shard(self, dataset_name: str | None) -> Any:
        return adapters.v1_session().get_dataset_shard(dataset_name)
