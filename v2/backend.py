"""The v2 backend: Ray's V2 engine, plus compat's migration aids."""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import datetime
from typing import Any

import pandas as pd

from compat import _messages, _ray, _storage, _tune, _usage
from compat._backend import TrainJob
from compat._ledger import LedgerSnapshot, group_rounds
from compat._model import CheckpointStatus, ReportRound, ValidationOutcome
from compat._patch import scoped_env
from compat._storage import RunStorage, checkpoint_dir_name
from compat.config import RunConfig
from compat.errors import CompatError
from compat.result import ReportedCheckpoint, Result, ledger_validated, worker_dataframe
from v1 import logs
from v2.semantics import V2Semantics
from v2.tune_callbacks import TuneCallbacks

SNAPSHOT_FILE = "checkpoint_manager_snapshot.json"
_STATUS_KEYS = {
    "validated_checkpoint_dir_names": CheckpointStatus.VALIDATED,
    "timed_out_validation_checkpoint_dir_names": CheckpointStatus.VALIDATION_TIMEOUT,
    "failed_validation_checkpoint_dir_names": CheckpointStatus.VALIDATION_FAILED,
}


# V2's controller waits this long between polls of the workers, and so each report round
# waits for it: Ray's default of 2 s makes 20 per-step reports take ~40 s. compat uses a
# shorter default unless the user set the variable. See docs/environment_variables.md.
POLL_ENV_VAR = "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"
COMPAT_POLL_DEFAULT_S = "0.05"
# What a Tune trial that drives a V2 run reserves for itself, and how long its run waits
# for workers (another trial may hold them for its whole run).
TRIAL_DRIVER_BUNDLE: dict[str, float] = {"memory": 1}
START_TIMEOUT_ENV_VAR = "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"
TRIAL_START_TIMEOUT_S = str(7 * 24 * 3600)


class V2Backend:
    name = "v2"
    semantics = V2Semantics()
    ledger_runs_callbacks = True
    # V2 validates in its controller from Ray 2.56; before, compat's ledger does, as under v1.
    ledger_runs_validation = not _ray.VALIDATION
    warns_v1_only = True

    def __init__(self) -> None:
        self.run_name = ""
        self.storage: RunStorage | None = None
        self.rows: logs.V1Rows | None = None  # for keep_v1_logs
        self.row_params: dict[str, Any] = {}

    def prepare(self, run: RunConfig, train_loop_config: dict[str, Any] | None, start_time: float) -> None:
        # Named here, as Ray would name it, so compat knows the run directory before Ray starts.
        self.run_name = run.name or f"ray_train_run-{datetime.now().strftime('%Y-%m-%d_%H-%M-%S.%f')[:-3]}"
        self.storage = _storage.resolve(run.storage_path, run.storage_filesystem, self.run_name)
        if self.storage.exists(SNAPSHOT_FILE):
            _usage.relied_on("rerun-same-name", f"{self.run_name!r} in {self.storage}", backend="v2")
        self.row_params = {
            "start_time": start_time,
            "config": {"train_loop_config": train_loop_config or {}},
            "trial_id": self.run_name,
        }
        if run.keep_v1_logs:
            for name in (logs.PROGRESS_CSV, logs.RESULT_JSON):
                self.storage.move_aside(name)  # an earlier run's logs never look current
            self.rows = logs.V1Rows(**self.row_params)

    def round_sink(self) -> Any:
        if self.rows is None or self.storage is None:
            return None
        return logs.LiveV1Logs(self.storage, self.rows)

    def engine_env(self) -> dict[str, str]:
        return {} if POLL_ENV_VAR in os.environ else {POLL_ENV_VAR: COMPAT_POLL_DEFAULT_S}

    def run(self, job: TrainJob) -> Any:
        CheckpointConfig, FailureConfig, RunConfig, ScalingConfig = _ray.v2_config_classes()

        _expose_v2_errors()

        s, r = job.scaling, job.run
        c, f = r.checkpoint_config, r.failure_config
        if r.worker_runtime_env and not _ray.WORKER_RUNTIME_ENV:
            raise CompatError(_messages.needs_newer_ray("RunConfig(worker_runtime_env=...)", "2.47"))
        # V1-only options were recorded (and warned about) by the trainer; V2 raises on
        # them, so they are not passed on.
        run = RunConfig(
            name=self.run_name or r.name,
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
            callbacks=[],  # UserCallbacks run in the ledger, which sees every round (see prepare)
            **({"worker_runtime_env": r.worker_runtime_env} if _ray.WORKER_RUNTIME_ENV else {}),
            **({"logging_config": r.logging_config} if _ray.LOGGING_CONFIG else {}),
        )
        trainer = job.framework.trainer_class("v2")(
            job.train_fn,
            train_loop_config=job.train_loop_config,
            **{job.framework.config_arg: job.backend_config},
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
            **({"validation_config": job.validation_config} if _ray.VALIDATION else {}),
        )
        tune = self._tune_callbacks(job)
        if tune is None:
            return trainer.fit()
        tune.start()
        failed = True
        try:
            raw = trainer.fit()
            failed = False
            return raw
        finally:
            tune.finish(failed)

    def run_in_trial(self, job: TrainJob) -> Any:
        """Inside a Tune trial: this run on V2's engine, every rank-0 round forwarded to
        Tune as it completes (V2's pattern for Train inside Tune)."""
        import ray.tune

        # Trials queue for workers as V1's do (Tune reserves them per trial under V1); V2's
        # controller would give up after 60 s waiting for another trial's workers.
        wait = {} if START_TIMEOUT_ENV_VAR in os.environ else {START_TIMEOUT_ENV_VAR: TRIAL_START_TIMEOUT_S}
        with scoped_env(wait):
            return _tune.run_forwarding(lambda: self.run(job), job.ledger, ray.tune.report)

    def trial_resources(self, scaling: Any) -> Any:
        """The trial itself only drives V2's controller (which reserves no CPU either): one
        byte of memory, as Tune rejects an empty request. The workers' resources are
        requested by the controller, so trials queue for them; cap
        ``TuneConfig(max_concurrent_trials)`` to bound how many trials wait at once."""
        from ray.tune import PlacementGroupFactory

        return PlacementGroupFactory([TRIAL_DRIVER_BUNDLE])

    def _tune_callbacks(self, job: TrainJob) -> TuneCallbacks | None:
        if not job.other_callbacks or self.storage is None:
            return None
        rows = logs.V1Rows(**self.row_params)
        return TuneCallbacks(job.other_callbacks, job.ledger, self.storage, rows, dict(self.row_params["config"]))

    def _v1_rows(self, snapshot: LedgerSnapshot) -> list[dict[str, Any]]:
        """Rank 0's rows as the live logs wrote them (same maker, same rounds, same order)."""
        assert self.rows is not None
        maker = logs.V1Rows(**self.row_params)
        by_key = group_rounds(snapshot.records)
        return [maker.round_row(by_key[key]) for key in sorted(by_key) if len(by_key[key]) == snapshot.world_size]

    def build_result(self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None) -> Result:
        rounds = snapshot.rounds()
        keep_v1_logs = job.run.keep_v1_logs
        workers = worker_dataframe(snapshot.records)
        v1_rows = self._v1_rows(snapshot) if keep_v1_logs else None
        if v1_rows and self.storage is not None:
            logs.repair_progress_csv(self.storage)  # the live CSV has the first row's columns only
        run_path = self.storage.run_dir if self.storage is not None else ""
        if raw is None:
            outcome = self.semantics.outcome(rounds, keep_v1_logs=keep_v1_logs)
            return Result(
                backend=self.name,
                metrics=outcome.result_metrics,
                checkpoint=None,
                path=run_path,
                error=error,
                metrics_dataframe=pd.DataFrame(v1_rows or outcome.dataframe_rows)
                if (v1_rows or outcome.dataframe_rows)
                else None,
                worker_metrics_dataframe=workers,
                return_value=snapshot.return_value,
                report_rounds=rounds,
            )
        best = list(raw.best_checkpoints or [])
        metrics, frame = raw.metrics, raw.metrics_dataframe
        if self.ledger_runs_validation:
            best, reported = ledger_validated(best, rounds)
            latest = {checkpoint_dir_name(c): m for c, m in best}
            if raw.checkpoint is not None and metrics is not None:
                metrics = latest.get(checkpoint_dir_name(raw.checkpoint), metrics)
            if best:  # V2's frame is its kept checkpoints' metrics, as validated
                frame = pd.DataFrame([m for _, m in best])
        else:
            statuses = _read_statuses(self.storage) if self.storage is not None else {}
            reported = [
                ReportedCheckpoint(ckpt, metrics, statuses.get(checkpoint_dir_name(ckpt), CheckpointStatus.COMMITTED))
                for ckpt, metrics in best
            ]
            rounds = _with_validation(rounds, reported)
        if v1_rows is not None and (v1_rows or frame is None):
            frame = pd.DataFrame(v1_rows) if v1_rows else None
        return Result(
            backend=self.name,
            metrics=metrics,
            checkpoint=raw.checkpoint,
            path=raw.path,
            error=raw.error,
            metrics_dataframe=frame,
            best_checkpoints=best,
            reported_checkpoints=reported,
            return_value=snapshot.return_value,  # rank 0's, as V2 (2.5x) gives; older V2 has none
            worker_metrics_dataframe=workers,
            report_rounds=rounds,
            raw=raw,
        )


def _with_validation(rounds: list[ReportRound], reported: list[ReportedCheckpoint]) -> list[ReportRound]:
    """V2 validates in its controller: recover each checkpoint round's outcome from the
    result, matching rounds to checkpoints by directory name (Ray sorts ``best_checkpoints``
    by score with ``checkpoint_score_attribute``, so positions say nothing)."""
    by_dir = {checkpoint_dir_name(c.checkpoint): c for c in reported}
    replaced = []
    for round_ in rounds:
        checkpoint = by_dir.get(round_.checkpoint_dir_name or "") if round_.has_checkpoint else None
        if checkpoint is None or checkpoint.status in (CheckpointStatus.COMMITTED, CheckpointStatus.PENDING_VALIDATION):
            replaced.append(round_)
            continue
        changed = {k: v for k, v in checkpoint.metrics.items() if round_.rank0_metrics.get(k, _MISSING) != v}
        validated = checkpoint.status is CheckpointStatus.VALIDATED
        outcome = ValidationOutcome(checkpoint.status, changed if validated else {})
        replaced.append(dataclasses.replace(round_, validation=outcome))
    return replaced


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
        if not hasattr(ray.train, name) and hasattr(exceptions, name):
            setattr(ray.train, name, getattr(exceptions, name))


def _read_statuses(storage: RunStorage) -> dict[str, CheckpointStatus]:
    text = storage.read_text(SNAPSHOT_FILE)
    if text is None:
        return {}
    state = json.loads(text)
    statuses: dict[str, CheckpointStatus] = {}
    for key, status in _STATUS_KEYS.items():
        for name in state.get(key) or []:
            statuses[name] = status
    return statuses
