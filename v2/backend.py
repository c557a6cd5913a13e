"""Ray's V2 engine: compat's driver half for it, running V2's semantics.

Ray's V2 run, plus compat's migration aids: every worker's reports, V1's logs with
``keep_v1_logs``, Ray Tune callbacks. V1's semantics on this engine are
:class:`v2.v1_on_v2.V1OnV2Engine`, which builds on this class.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from ray.train.v2.api.callback import UserCallback

from compat_core import config, messages
from compat_core.config import RunConfig
from compat_core.errors import CompatError
from compat_core.files import storage
from compat_core.files.storage import RunStorage, checkpoint_dir_name
from compat_core.integration.patch import scoped_env
from compat_core.migration import usage
from compat_core.releases import facts, standins
from compat_core.run import tune
from compat_core.run.engine import PreparedRun, TrainJob
from compat_core.run.ledger import LedgerClient
from compat_core.semantics import restore, v1_logs, validations
from compat_core.semantics.observed import V2Semantics
from compat_core.semantics.records import LedgerSnapshot
from compat_core.semantics.restore import RestoreSpec
from compat_core.semantics.result import (
    ReportedCheckpoint,
    ResultParts,
    latest_checkpoint_metrics,
    ledger_validated,
    with_statuses,
)
from compat_core.semantics.rounds import CheckpointStatus, ReportRound, ValidationOutcome
from compat_core.switch import V2, Mode
from v2 import groups
from v2.tune_callbacks import TuneCallbacks
from v2.worker import V2WorkerSide

SNAPSHOT_FILE = standins.V2_SNAPSHOT


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


@dataclass(frozen=True)
class V2Prepared(PreparedRun):
    """The run as compat hands it to Ray's V2 engine: named as Ray would name it (so compat
    knows its directory before Ray starts), its storage and directory, and the maker of V1's
    rows when V1's logs are written (``keep_v1_logs``, or V1 semantics)."""

    run_name: str = ""
    storage_path: Any = None  # what Ray's RunConfig gets
    storage_filesystem: Any = None
    storage: RunStorage | None = None  # the run's directory (V1 semantics: the trial's)
    rows: v1_logs.V1Rows | None = None  # the ledger's copy makes the rows; this one, none
    row_params: dict[str, Any] = field(default_factory=dict)  # how ``rows`` was made, to make more
    logged_before: int = 0  # the rows a restored trial's ``result.json`` held before this fit
    # V1's logs on an object store: how often they are uploaded, and their copies' key on this node.
    sync_period_s: float = math.inf
    staging_key: str = field(default_factory=lambda: uuid.uuid4().hex)
    # V1 semantics with SyncConfig(sync_artifacts=True): the workers' files reach the trial directory.
    artifacts: Any = None  # v2.v1_on_v2.TrialArtifacts


def prepared_of(job_or_prepared: TrainJob | PreparedRun) -> V2Prepared:
    prepared = job_or_prepared.prepared if isinstance(job_or_prepared, TrainJob) else job_or_prepared
    assert isinstance(prepared, V2Prepared), f"not prepared by V2's engine: {prepared}"
    return prepared


class V2Engine:
    """Ray's V2 engine running V2's semantics (and the run itself for :class:`V1OnV2Engine`)."""

    unscored_checkpoints_newest = False  # V2's manager ranks it by a score of -inf

    def __init__(self, mode: Mode) -> None:
        assert mode.engine is V2, f"not a mode of Ray's V2 engine: {mode}"
        self.mode = mode
        # V2 validates in its controller from Ray 2.56; before, compat's ledger does.
        self.ledger_runs_validation = not facts.VALIDATION

    def worker_side(self, prepared: PreparedRun) -> V2WorkerSide:
        return V2WorkerSide(self.mode)

    def prepare(
        self,
        run: RunConfig,
        v1_config: dict[str, Any],
        start_time: float,
        trainer_name: str,
        restoring: RestoreSpec | None = None,
    ) -> V2Prepared:
        run = resolved_run_config(run, restoring)
        run_name, run_dir = run_name_and_dir(run)
        has_snapshot = run_dir.exists(SNAPSHOT_FILE)  # one stat: an object store's is a request
        start = None
        if restoring is not None and not has_snapshot:
            # Nothing of V2's to resume (V1's engine wrote it: the switch flipped): the run
            # starts from the latest checkpoint of the experiment.
            start = restore.start_checkpoint(restoring.experiment)
        if restoring is None and has_snapshot:
            usage.relied_on("rerun-same-name", f"{run_name!r} in {run_dir}", mode=self.mode)
        # keep_v1_logs: V1's rows with the run's name as the trial id and V2's config.
        row_params: dict[str, Any] = {
            "start_time": start_time,
            "config": {"train_loop_config": v1_config.get("train_loop_config") or {}},
            "trial_id": run_name,
        }
        rows = None
        if run.keep_v1_logs:
            rows = v1_logs.V1Rows(**row_params)
            v1_logs.set_aside(run_dir)
        return V2Prepared(
            experiment=run_dir,
            start_checkpoint=start,
            run_name=run_name,
            storage_path=run.storage_path,
            storage_filesystem=run.storage_filesystem,
            storage=run_dir,
            rows=rows,
            row_params=row_params,
            sync_period_s=v1_logs.sync_period_s(run.sync_config),
        )

    def round_sink(self, prepared: PreparedRun) -> Any:
        p = prepared_of(prepared)
        if p.rows is None or p.storage is None:
            return None
        return v1_logs.LiveV1Logs(p.storage, p.sync_period_s, p.staging_key)

    def round_rows(self, prepared: PreparedRun, other_callbacks: list[Any]) -> v1_logs.V1Rows | None:
        """V1's logs' rows, which Ray Tune callbacks are given too (without V1's logs, rows
        for those callbacks alone)."""
        p = prepared_of(prepared)
        if p.rows is not None and p.storage is not None:
            return p.rows
        if TuneCallbacks.CONSUMER in self.ledger_consumers(p, False, other_callbacks):
            return v1_logs.V1Rows(**p.row_params)
        return None

    def ledger_consumers(self, prepared: PreparedRun, in_trial: bool, other_callbacks: list[Any]) -> tuple[str, ...]:
        """Inside a Tune trial, the forwarding of rounds to Tune; with Ray Tune callbacks (and
        somewhere to keep their files), those callbacks' thread."""
        tune_callbacks = bool(other_callbacks) and prepared_of(prepared).storage is not None
        return (tune.CONSUMER,) * in_trial + (TuneCallbacks.CONSUMER,) * tune_callbacks

    def engine_env(self) -> dict[str, str]:
        return {} if POLL_ENV_VAR in os.environ else {POLL_ENV_VAR: COMPAT_POLL_DEFAULT_S}

    def run(self, job: TrainJob, watcher: Any = None) -> Any:
        """``watcher``: inside a Tune trial, the :class:`v2.groups.GroupWatcher` V2's
        controller registers its worker groups with."""
        CheckpointConfig, FailureConfig, RunConfig, ScalingConfig = standins.v2_config_classes()

        standins.expose_v2_names()

        s, r, p = job.scaling, job.run, prepared_of(job)
        c, f = r.checkpoint_config, r.failure_config
        if r.worker_runtime_env and not facts.WORKER_RUNTIME_ENV:
            raise CompatError(messages.needs_newer_ray("RunConfig(worker_runtime_env=...)", "2.47"))
        # V1-only options were recorded (and warned about) by the trainer; V2 raises on
        # them, so they are not passed on.
        run = RunConfig(
            name=p.run_name or r.name,
            storage_path=p.storage_path if p.run_name else r.storage_path,
            storage_filesystem=p.storage_filesystem if p.run_name else r.storage_filesystem,
            failure_config=config.ray_v2_failure_config(f),
            checkpoint_config=CheckpointConfig(
                num_to_keep=c.num_to_keep,
                checkpoint_score_attribute=c.checkpoint_score_attribute,
                checkpoint_score_order=c.checkpoint_score_order,
            ),
            # The users' UserCallbacks run in the ledger, which sees every round; V2's
            # controller tells it of every failure it sees (see EngineFailures).
            callbacks=[EngineFailures(job.ledger), *([groups.RegisterGroups(watcher)] if watcher is not None else [])],
            **({"worker_runtime_env": r.worker_runtime_env} if facts.WORKER_RUNTIME_ENV else {}),
            **({"logging_config": r.logging_config} if facts.LOGGING_CONFIG else {}),
        )
        backend_config = standins.v2_backend_config(job.framework.config_for(job.backend_config, V2), bool(s.use_gpu))
        trainer = job.framework.trainer_class(V2)(
            job.train_fn,
            train_loop_config=job.train_loop_config,
            **{job.framework.config_arg: backend_config},
            scaling_config=config.ray_scaling_config(s, v2_engine=True),
            run_config=run,
            datasets=job.datasets,
            dataset_config=job.dataset_config,
            **({"validation_config": job.validation_config} if facts.VALIDATION else {}),
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

    def in_trial(self, run: RunConfig, trial_dir: str) -> RunConfig:
        """Without a storage path of its own (Ray's default, which RunConfig fills in), the run
        goes in the trial's directory."""
        if run.storage_path not in (None, storage.default_storage_path()):
            return run
        return dataclasses.replace(run, name="train", storage_path=trial_dir)

    def run_in_trial(self, job: TrainJob) -> Any:
        """Inside a Tune trial: this run on V2's engine, every rank-0 round forwarded to
        Tune as it completes (V2's pattern for Train inside Tune)."""

        # Trials queue for workers as V1's do (Tune reserves them per trial under V1); V2's
        # controller would give up after 60 s waiting for another trial's workers.
        wait = {} if START_TIMEOUT_ENV_VAR in os.environ else {START_TIMEOUT_ENV_VAR: TRIAL_START_TIMEOUT_S}
        # The workers' placement groups outlive a controller Tune's end of the trial kills.
        watcher = groups.start_watcher()

        def run() -> Any:
            try:
                return self.run(job, watcher)
            finally:
                if watcher is not None:
                    watcher.release.remote()  # fit() is over: its controller is done

        with scoped_env(wait):
            return tune.run_forwarding(run, job.ledger, _tune_report)

    def trial_resources(self, scaling: Any) -> Any:
        """The trial itself only drives V2's controller (which reserves no CPU either): one
        byte of memory, as Tune rejects an empty request. The workers' resources are
        requested by the controller, so trials queue for them; cap
        ``TuneConfig(max_concurrent_trials)`` to bound how many trials wait at once."""
        from ray.tune import PlacementGroupFactory

        return PlacementGroupFactory([TRIAL_DRIVER_BUNDLE])

    def _tune_callbacks(self, job: TrainJob) -> TuneCallbacks | None:
        p = prepared_of(job)
        if TuneCallbacks.CONSUMER not in self.ledger_consumers(p, False, job.other_callbacks) or p.storage is None:
            return None
        return TuneCallbacks(
            job.other_callbacks, job.ledger, p.storage, p.row_params["trial_id"], dict(p.row_params["config"])
        )

    def _logged(self, p: V2Prepared) -> v1_logs.LoggedRows | None:
        """V1's rows as the run's logs hold them (the ledger made and wrote each as its round
        completed), read back in one pass, with ``progress.csv`` rewritten with every key if a
        key came after its first row; None without V1's logs."""
        if p.rows is None or p.storage is None:
            return None
        v1_logs.upload_staged(p.storage, p.staging_key)  # a ledger host lost for good left them
        logged = v1_logs.read_logged(p.storage, skip=p.logged_before)
        v1_logs.repair_progress_csv(p.storage, logged.columns)  # the live CSV has the first row's columns
        return logged

    def _logged_frame(self, p: V2Prepared, logged: v1_logs.LoggedRows) -> pd.DataFrame | None:
        """V1's ``metrics_dataframe``: read back from ``progress.csv``, as V1 reads it (nested keys
        flattened to ``a/b``, values as the CSV gives them); None when it holds no row."""
        if p.storage is None or not logged.columns:
            return None
        with p.storage.filesystem.open_input_stream(p.storage.path(v1_logs.PROGRESS_CSV)) as f:
            return pd.read_csv(f)

    def result_parts(
        self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None
    ) -> ResultParts:
        """V2's semantics: the kept checkpoints' metrics (V1's rows with ``keep_v1_logs``)."""
        p = prepared_of(job)
        logged = self._logged(p)
        v1_frame = self._logged_frame(p, logged) if logged is not None and logged.count else None
        rounds = snapshot.digest.checkpoint_rounds  # V2's semantics read the checkpoints' rounds only
        if raw is None:
            outcome = V2Semantics().outcome(rounds, keep_v1_logs=logged is not None)
            frame = v1_frame
            if frame is None and outcome.dataframe_rows:
                frame = pd.DataFrame(outcome.dataframe_rows)
            return ResultParts(outcome.result_metrics, run_path(p), frame)
        best = list(raw.best_checkpoints or [])
        metrics, frame = raw.metrics, raw.metrics_dataframe
        revise = None
        if self.ledger_runs_validation:
            best, reported = ledger_validated(best, snapshot.validated_rounds)  # earlier fits' too
            metrics = latest_checkpoint_metrics(best, raw.checkpoint, metrics)
            if best:  # V2's frame is its kept checkpoints' metrics, as validated
                frame = pd.DataFrame([m for _, m in best])
        else:
            reported = with_statuses(best, validations.rays_statuses(p.storage) if p.storage is not None else {})
            revise = functools.partial(_with_validation, reported=reported)
        if logged is not None and (logged.count or frame is None):
            frame = v1_frame
        return ResultParts(metrics, raw.path, frame, best, reported, revise)


def run_path(p: V2Prepared) -> str:
    return p.storage.run_dir if p.storage is not None else ""


def run_name_and_dir(run: RunConfig) -> tuple[str, RunStorage]:
    """The run's name as Ray would give it, and its directory."""
    name = run.name or config.generated_name()
    return name, storage.resolve(run.storage_path, run.storage_filesystem, name)


def resolved_run_config(run: RunConfig, restoring: RestoreSpec | None) -> RunConfig:
    """The run's storage root resolved (Ray's default when the user gave none); a restored run
    keeps the name and storage of the experiment it continues."""
    run = dataclasses.replace(run, storage_path=storage.root(run.storage_path, run.storage_filesystem))
    if restoring is None:
        return run
    return dataclasses.replace(
        run,
        name=restoring.name,
        storage_path=restoring.storage_path,
        storage_filesystem=restoring.filesystem or run.storage_filesystem,
    )


def _tune_report(metrics: dict[str, Any], checkpoint: Any = None) -> None:
    """``ray.tune.report`` with the checkpoint as Tune's own class: Ray warns that a
    ``ray.train.Checkpoint`` "should be imported from ray.tune", and here compat, not the user,
    hands it over (Rays before ``ray.tune.Checkpoint`` take the train class)."""
    import ray.tune

    tune_checkpoint = getattr(ray.tune, "Checkpoint", None)
    if checkpoint is not None and tune_checkpoint is not None and not isinstance(checkpoint, tune_checkpoint):
        checkpoint = tune_checkpoint(checkpoint.path, filesystem=checkpoint.filesystem)
    ray.tune.report(metrics, checkpoint=checkpoint)


class EngineFailures(UserCallback):
    """A V2 ``UserCallback`` in the controller that hands every failure of a worker-group poll
    to the ledger: a worker that died without raising (``os._exit``, the OOM killer, a lost
    node) never reports its own, and ``after_exception`` must still follow (raw V2 calls it
    for each such failure, with ``{rank: WorkerHealthCheckFailedError}`` and the like)."""

    def __init__(self, ledger: LedgerClient) -> None:
        self.ledger = ledger

    def after_exception(self, run_context: Any, worker_exceptions: dict[int, Exception]) -> None:

        self.ledger.engine_failed(dict(worker_exceptions))


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
