"""The v1 backend: Ray's V1 engine, plus what V1 users expect and Ray loses."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd

from compat_core import storage, v1_logs
from compat_core.config import RunConfig
from compat_core.engine import TrainJob, note_v1_rerun
from compat_core.ledger import LedgerSnapshot
from compat_core.model import CheckpointStatus, ValidationOutcome, merge_validation
from compat_core.result import Result, ledger_validated, worker_dataframe
from compat_core.semantics import V1Semantics
from compat_core.switch import Engine


class V1Backend:
    name = "v1"
    engine: Engine = "v1"
    semantics = V1Semantics()
    ledger_runs_callbacks = True
    ledger_runs_validation = True
    warns_v1_only = False

    def prepare(
        self, run: RunConfig, train_loop_config: dict[str, Any] | None, start_time: float, trainer_name: str
    ) -> None:
        note_v1_rerun(run)

    def round_sink(self) -> Any:
        return None  # Ray's V1 engine writes its own logs as it goes

    def engine_env(self) -> dict[str, str]:
        return {}

    def run(self, job: TrainJob) -> Any:
        with _quiet_trainer_resources(job):
            trainer = job.framework.trainer_class("v1")(**ray_trainer_args(job))
        return trainer.fit()

    def run_in_trial(self, job: TrainJob) -> Any:
        """Inside a Tune trial: Ray's own trainer-as-trainable path (what the trainable of
        ``BaseTrainer.as_trainable`` runs), so the trial behaves as a V1 Trainer's trial."""
        from ray.train.base_trainer import _train_coordinator_fn

        with _quiet_trainer_resources(job):
            _train_coordinator_fn(
                ray_trainer_args(job), trainer_cls=job.framework.trainer_class("v1"), metadata=job.metadata or {}
            )
        return None

    def trial_resources(self, scaling: Any) -> Any:
        """The trial's placement group: V1's trainer bundle (no CPU, see _ray_scaling) and
        one bundle per worker, as V1's ``TrainTrainable`` asks."""
        return _ray_scaling(scaling).as_placement_group_factory()

    def build_result(self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None) -> Result:
        rounds = snapshot.rounds()
        by_dir = {r.checkpoint_dir_name: r for r in rounds if r.checkpoint_dir_name}
        workers = worker_dataframe(snapshot.records)
        if raw is None:
            outcome = self.semantics.outcome(rounds)
            return Result(
                backend=self.name,
                metrics=outcome.result_metrics,
                checkpoint=None,
                path=_failed_run_path(snapshot),
                error=error,
                metrics_dataframe=pd.DataFrame(outcome.dataframe_rows) if outcome.dataframe_rows else None,
                worker_metrics_dataframe=workers,
                return_value=snapshot.return_value,
                report_rounds=rounds,
            )

        v1_logs.repair_progress_csv(storage.RunStorage(raw.filesystem, raw.path))

        def validated(metrics: dict[str, Any]) -> dict[str, Any]:
            round_ = by_dir.get(str(metrics.get("checkpoint_dir_name")))
            return merge_validation(metrics, round_.validation) if round_ else dict(metrics)

        best, reported = ledger_validated(list(raw.best_checkpoints or []), rounds)
        return Result(
            backend=self.name,
            metrics=validated(raw.metrics) if raw.metrics is not None else None,
            checkpoint=raw.checkpoint,
            path=raw.path,
            error=raw.error,
            metrics_dataframe=_validated_dataframe(raw.metrics_dataframe, by_dir),
            best_checkpoints=best,
            reported_checkpoints=reported,
            return_value=snapshot.return_value,
            worker_metrics_dataframe=workers,
            report_rounds=rounds,
            raw=raw,
        )


def _ray_scaling(s: Any) -> Any:
    from ray.air.config import ScalingConfig

    return ScalingConfig(
        num_workers=s.num_workers,
        use_gpu=s.use_gpu,
        resources_per_worker=s.resources_per_worker,
        placement_strategy=s.placement_strategy,
        accelerator_type=s.accelerator_type,
        # V1 reserves a CPU for its trainer actor: 2 workers would wait forever on
        # 2 cores. V2's controller reserves none; compat does the same by default.
        trainer_resources=s.trainer_resources if s.trainer_resources is not None else {"CPU": 0},
    )


def ray_trainer_args(job: TrainJob) -> dict[str, Any]:
    """The keyword arguments of Ray's V1 trainer for ``job``."""
    from ray.air.config import CheckpointConfig, FailureConfig, RunConfig

    r, c, f = job.run, job.run.checkpoint_config, job.run.failure_config
    run = RunConfig(
        name=r.name,
        storage_path=r.storage_path,
        storage_filesystem=r.storage_filesystem,
        failure_config=FailureConfig(max_failures=f.max_failures if f else 0, fail_fast=bool(f and f.fail_fast)),
        checkpoint_config=CheckpointConfig(
            num_to_keep=c.num_to_keep,
            checkpoint_score_attribute=c.checkpoint_score_attribute,
            checkpoint_score_order=c.checkpoint_score_order,
            checkpoint_frequency=c.checkpoint_frequency or 0,
            checkpoint_at_end=c.checkpoint_at_end,
        )
        if c
        else None,
        sync_config=r.sync_config,
        verbose=r.verbose,
        stop=r.stop,
        callbacks=job.other_callbacks or None,
        progress_reporter=r.progress_reporter,
        log_to_file=r.log_to_file or False,
    )
    return {
        "train_loop_per_worker": job.train_fn,
        "train_loop_config": job.train_loop_config,
        job.framework.config_arg: job.backend_config,
        "scaling_config": _ray_scaling(job.scaling),
        "run_config": run,
        "datasets": job.datasets,
        "dataset_config": job.dataset_config,
        "metadata": job.metadata,
        "resume_from_checkpoint": job.resume_from_checkpoint,
    }


@contextmanager
def _quiet_trainer_resources(job: TrainJob) -> Iterator[None]:
    """compat sets ``trainer_resources`` itself; Ray's deprecation warning about it would
    blame the user for an option they never used."""
    with warnings.catch_warnings():
        if job.scaling.trainer_resources is None:
            warnings.filterwarnings("ignore", message=r".*trainer_resources", category=Warning)
        yield


def _validated_dataframe(frame: pd.DataFrame | None, by_dir: dict[str, Any]) -> pd.DataFrame | None:
    """V1's dataframe with validated metrics merged into the rows of their checkpoint."""
    if frame is None or "checkpoint_dir_name" not in frame:
        return frame
    frame = frame.copy()
    for dir_name, round_ in by_dir.items():
        outcome: ValidationOutcome | None = round_.validation
        if outcome is None or outcome.status is not CheckpointStatus.VALIDATED:
            continue
        rows = frame["checkpoint_dir_name"] == dir_name
        for key, value in outcome.metrics.items():
            if key not in frame:
                frame[key] = float("nan")  # missing, as pandas fills any other hole
            frame.loc[rows, key] = value
    return frame


def _failed_run_path(snapshot: LedgerSnapshot) -> str:
    for record in snapshot.records:
        if record.checkpoint is not None:
            return os.path.dirname(record.checkpoint.path)
    return ""
