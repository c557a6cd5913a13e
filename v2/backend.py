"""The v2 backend: Ray's V2 engine, plus compat's migration aids."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import pandas as pd

from compat._backend import TrainJob
from compat._ledger import LedgerSnapshot
from compat._model import CheckpointStatus, ReportRound, ValidationOutcome
from compat.result import ReportedCheckpoint, Result, worker_dataframe
from v1 import logs
from v2.callbacks import GuardedCallback
from v2.semantics import V2Semantics

SNAPSHOT_FILE = "checkpoint_manager_snapshot.json"
_STATUS_KEYS = {
    "validated_checkpoint_dir_names": CheckpointStatus.VALIDATED,
    "timed_out_validation_checkpoint_dir_names": CheckpointStatus.VALIDATION_TIMEOUT,
    "failed_validation_checkpoint_dir_names": CheckpointStatus.VALIDATION_FAILED,
}


class V2Backend:
    name = "v2"
    semantics = V2Semantics()

    def run(self, job: TrainJob) -> Any:
        from ray.train.v2.api.config import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
        from ray.train.v2.torch.torch_trainer import TorchTrainer

        _expose_v2_errors()

        s, r = job.scaling, job.run
        c, f = r.checkpoint_config, r.failure_config
        # V1-only options were recorded (and warned about) by the trainer; V2 raises on
        # them, so they are not passed on.
        run = RunConfig(
            name=r.name,
            storage_path=r.storage_path,
            storage_filesystem=r.storage_filesystem,
            failure_config=FailureConfig(max_failures=f.max_failures) if f else None,
            checkpoint_config=CheckpointConfig(
                num_to_keep=c.num_to_keep,
                checkpoint_score_attribute=c.checkpoint_score_attribute,
                checkpoint_score_order=c.checkpoint_score_order,
            )
            if c
            else None,
            callbacks=[GuardedCallback(cb, job.ledger) for cb in job.user_callbacks],
            worker_runtime_env=r.worker_runtime_env,
        )
        trainer = TorchTrainer(
            job.train_fn,
            train_loop_config=job.train_loop_config,
            torch_config=job.torch_config,
            scaling_config=ScalingConfig(
                num_workers=s.num_workers,
                use_gpu=s.use_gpu,
                resources_per_worker=s.resources_per_worker,
                placement_strategy=s.placement_strategy,
                accelerator_type=s.accelerator_type,
            ),
            run_config=run,
            datasets=job.datasets,
            dataset_config=job.dataset_config,
            validation_config=job.validation_config,
        )
        return trainer.fit()

    def build_result(self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None) -> Result:
        rounds = snapshot.rounds()
        keep_v1_logs = job.run.keep_v1_logs
        workers = worker_dataframe(snapshot.records)
        v1_rows = _v1_rows(job, snapshot) if keep_v1_logs else None
        if raw is None:
            outcome = self.semantics.outcome(rounds, keep_v1_logs=keep_v1_logs)
            return Result(
                backend=self.name,
                metrics=outcome.result_metrics,
                checkpoint=None,
                path=_run_path(job),
                error=error,
                metrics_dataframe=pd.DataFrame(v1_rows or outcome.dataframe_rows)
                if (v1_rows or outcome.dataframe_rows)
                else None,
                worker_metrics_dataframe=workers,
                return_value=snapshot.return_value,
                report_rounds=rounds,
            )
        statuses = _read_statuses(raw.path)
        best = list(raw.best_checkpoints or [])
        reported = [
            ReportedCheckpoint(ckpt, metrics, statuses.get(os.path.basename(ckpt.path), CheckpointStatus.COMMITTED))
            for ckpt, metrics in best
        ]
        frame = raw.metrics_dataframe
        if v1_rows is not None:
            logs.write_logs(raw.path, v1_rows)
            frame = pd.DataFrame(v1_rows) if v1_rows else None
        return Result(
            backend=self.name,
            metrics=raw.metrics,
            checkpoint=raw.checkpoint,
            path=raw.path,
            error=raw.error,
            metrics_dataframe=frame,
            best_checkpoints=best,
            reported_checkpoints=reported,
            return_value=raw.return_value,
            worker_metrics_dataframe=workers,
            report_rounds=_with_validation(rounds, reported),
            raw=raw,
        )


def _with_validation(rounds: list[ReportRound], reported: list[ReportedCheckpoint]) -> list[ReportRound]:
    """V2 validates in its controller: recover each checkpoint round's outcome from the result."""
    checkpoint_rounds = [r for r in rounds if r.has_checkpoint]
    if len(checkpoint_rounds) != len(reported):  # num_to_keep deleted some: no safe pairing
        return rounds
    outcomes = {}
    for round_, checkpoint in zip(checkpoint_rounds, reported, strict=True):
        if checkpoint.status in (CheckpointStatus.COMMITTED, CheckpointStatus.PENDING_VALIDATION):
            continue
        changed = {k: v for k, v in checkpoint.metrics.items() if round_.rank0_metrics.get(k, _MISSING) != v}
        validated = checkpoint.status is CheckpointStatus.VALIDATED
        outcomes[round_.index] = ValidationOutcome(checkpoint.status, changed if validated else {})
    return [dataclasses.replace(r, validation=outcomes.get(r.index)) for r in rounds]


_MISSING = object()


def _expose_v2_errors() -> None:
    """Make V2's errors unpicklable on a driver whose ``ray.train`` was imported in V1 mode.

    V2 sets ``__module__ = "ray.train"`` on its exceptions, so they are pickled as
    ``ray.train.WorkerGroupError``; if this process imported ``ray.train`` with the switch
    at 0, that attribute does not exist and the failure arrives as a ``RaySystemError``.
    Only missing names are added; nothing Ray bound is replaced.
    """
    import ray.train
    from ray.train.v2.api import exceptions

    for name in ("ControllerError", "WorkerGroupError", "NCCLHangError", "PreemptionError"):
        if not hasattr(ray.train, name):
            setattr(ray.train, name, getattr(exceptions, name))


def _v1_rows(job: TrainJob, snapshot: LedgerSnapshot) -> list[dict[str, Any]]:
    """Rank 0's reports with V1's auto-filled keys, as V1 would have logged them."""
    records = sorted((r for r in snapshot.records if r.rank == 0), key=lambda r: r.index)
    return logs.auto_filled(
        [r.metrics for r in records],
        [r.timestamp for r in records],
        [r.checkpoint_dir_name if r.has_checkpoint else None for r in records],
        start_time=job.start_time,
        config={"train_loop_config": job.train_loop_config or {}},
        trial_id=job.run.name or "compat",
    )


def _read_statuses(run_path: str) -> dict[str, CheckpointStatus]:
    path = os.path.join(run_path, SNAPSHOT_FILE)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        state = json.load(f)
    statuses: dict[str, CheckpointStatus] = {}
    for key, status in _STATUS_KEYS.items():
        for name in state.get(key) or []:
            statuses[name] = status
    return statuses


def _run_path(job: TrainJob) -> str:
    return os.path.join(job.run.storage_path or "", job.run.name or "")
