"""Ray's V2 engine: compat's driver half for it, running either semantics.

V2 semantics: Ray's V2 run, plus compat's migration aids (every worker's reports, V1's logs
with ``keep_v1_logs``, Ray Tune callbacks). V1 semantics (``Mode(V1, V2)``): what a run on
V1's engine gives, from a run on V2's. Every report is kept (compat's ledger sees every
round); ``result.metrics`` is the last report and ``metrics_dataframe`` one row per report of
rank 0, both with V1's auto-filled keys; ``progress.csv``, ``result.json`` and TensorBoard
events are written live into a V1-style trial directory,
``<storage>/<experiment>/<Trainer>_<id>_00000_0_<date>``, a new one per ``fit()`` as V1's;
checkpoints are named ``checkpoint_00000N``; compat's ledger runs checkpoint validation as on
V1's engine. The differences that remain are in docs/compatibility.md §28.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import posixpath
import time
import uuid
from datetime import datetime
from typing import Any

import pandas as pd
from ray.train.v2.api.callback import UserCallback

from compat_core import messages, releases, restore, storage, tune, usage, v1_logs
from compat_core.config import RunConfig
from compat_core.engine import TrainJob, note_v1_rerun
from compat_core.errors import CompatError
from compat_core.ledger import LedgerClient, LedgerSnapshot, group_rounds
from compat_core.model import CheckpointStatus, ReportRound, ValidationOutcome, merge_validation
from compat_core.patch import scoped_env
from compat_core.restore import RestoreSpec
from compat_core.result import ReportedCheckpoint, ResultParts, ledger_validated, validated_dataframe
from compat_core.semantics import V2Semantics
from compat_core.storage import RunStorage, checkpoint_dir_name
from compat_core.switch import V2, Mode
from v2 import groups
from v2.tune_callbacks import TuneCallbacks
from v2.worker import V2WorkerSide

SNAPSHOT_FILE = restore.V2_SNAPSHOT
PARAMS_JSON = "params.json"  # the trial's config, as V1 writes it
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


class V2Engine:
    """Ray's V2 engine running ``mode`` (V2 semantics, or V1's: see the module)."""

    unscored_checkpoints_newest = False  # V2's manager ranks it by a score of -inf

    def __init__(self, mode: Mode) -> None:
        assert mode.engine is V2, f"not a mode of Ray's V2 engine: {mode}"
        self.mode = mode
        # V2 validates in its controller from Ray 2.56; before, compat's ledger does, as it
        # always does for V1 semantics.
        self.ledger_runs_validation = mode.emulates_v1_engine or not releases.VALIDATION
        self.run_name = ""
        self.storage_path: Any = None  # what Ray's RunConfig gets
        self.storage: RunStorage | None = None
        self.rows: v1_logs.V1Rows | None = None  # V1's rows: keep_v1_logs, or V1 semantics
        self.row_params: dict[str, Any] = {}
        self.storage_filesystem: Any = None
        self.experiment: RunStorage | None = None
        self.trial: dict[str, str] = {}  # V1 semantics: the trial directory, for restore()
        self.first_checkpoint_index = 0  # V1 semantics: a restored trial numbers on
        self.start_checkpoint: Any = None  # a restored run V2 cannot resume itself starts there

    def worker_side(self) -> V2WorkerSide:
        return V2WorkerSide(self.mode)

    def prepare(
        self,
        run: RunConfig,
        train_loop_config: dict[str, Any] | None,
        start_time: float,
        trainer_name: str,
        restoring: RestoreSpec | None = None,
    ) -> None:
        v1 = self.mode.emulates_v1_engine
        trial_id = None
        run = dataclasses.replace(run, storage_path=storage.root(run.storage_path, run.storage_filesystem))
        if restoring is not None:  # V2's restore: the same name and storage, which V2 resumes
            run = dataclasses.replace(
                run,
                name=restoring.name,
                storage_path=restoring.storage_path,
                storage_filesystem=restoring.filesystem or run.storage_filesystem,
            )
        elif v1:
            note_v1_rerun(run, self.mode)  # the experiment directory, as on V1's engine
        if v1:
            trial = restoring.state.trial if restoring is not None else {}
            if restoring is not None and not trial:  # V1's engine wrote it: its newest trial goes on
                newest = restore.latest_v1_trial(restoring.experiment)
                trial = restore.trial_of(newest) if newest else {}
            experiment, run, trial_id = _v1_trial(run, trainer_name, start_time, trial)
            self.experiment, self.trial = experiment, {"name": str(run.name), "id": trial_id}
        # Named here, as Ray would name it, so compat knows the run directory before Ray starts.
        self.run_name = run.name or f"ray_train_run-{datetime.now().strftime('%Y-%m-%d_%H-%M-%S.%f')[:-3]}"
        self.storage_path = run.storage_path
        self.storage_filesystem = run.storage_filesystem
        self.storage = storage.resolve(run.storage_path, run.storage_filesystem, self.run_name)
        has_snapshot = self.storage.exists(SNAPSHOT_FILE)  # one stat: an object store's is a request
        if restoring is not None and not has_snapshot:
            # Nothing of V2's to resume (V1's engine wrote it: the switch flipped): the run
            # starts from the latest checkpoint there.
            if v1:
                self.start_checkpoint = restore.latest_checkpoint(self.storage)
            else:
                self.start_checkpoint = restore.start_checkpoint(restoring.experiment)
        if not v1:
            self.experiment = self.storage
            if restoring is None and has_snapshot:
                usage.relied_on("rerun-same-name", f"{self.run_name!r} in {self.storage}", mode=self.mode)
        # The V1 rows' trial id and config: V1's (``None`` stays ``None``, as in V1's rows), or
        # for keep_v1_logs the run's name and V2's config.
        config = {"train_loop_config": train_loop_config if v1 else (train_loop_config or {})}
        self.row_params = {"start_time": start_time, "config": config, "trial_id": trial_id or self.run_name}
        if run.keep_v1_logs or v1:
            self.rows = v1_logs.V1Rows(**self.row_params)
            if restoring is not None and v1:  # the trial goes on: its logs and numbering too
                self.rows.continue_after(self.storage.read_text(v1_logs.RESULT_JSON) or "")
                self.first_checkpoint_index = _next_checkpoint_number(self.storage)
            else:
                for name in (v1_logs.PROGRESS_CSV, v1_logs.RESULT_JSON):
                    self.storage.move_aside(name)  # an earlier run's logs never look current
        if v1:
            self.storage.write_text(PARAMS_JSON, json.dumps(config, indent=2, sort_keys=True, default=repr))

    def round_sink(self) -> Any:
        if self.rows is None or self.storage is None:
            return None
        return v1_logs.LiveV1Logs(self.storage, self.rows)

    def engine_env(self) -> dict[str, str]:
        return {} if POLL_ENV_VAR in os.environ else {POLL_ENV_VAR: COMPAT_POLL_DEFAULT_S}

    def run(self, job: TrainJob, watcher: Any = None) -> Any:
        """``watcher``: inside a Tune trial, the :class:`v2.groups.GroupWatcher` V2's
        controller registers its worker groups with."""
        CheckpointConfig, FailureConfig, RunConfig, ScalingConfig = releases.v2_config_classes()

        releases.expose_v2_names()

        s, r = job.scaling, job.run
        c, f = r.checkpoint_config, r.failure_config
        if r.worker_runtime_env and not releases.WORKER_RUNTIME_ENV:
            raise CompatError(messages.needs_newer_ray("RunConfig(worker_runtime_env=...)", "2.47"))
        # V1-only options were recorded (and warned about) by the trainer; V2 raises on
        # them, so they are not passed on.
        run = RunConfig(
            name=self.run_name or r.name,
            storage_path=self.storage_path if self.run_name else r.storage_path,
            storage_filesystem=self.storage_filesystem if self.run_name else r.storage_filesystem,
            failure_config=FailureConfig(max_failures=f.max_failures),
            checkpoint_config=CheckpointConfig(
                num_to_keep=c.num_to_keep,
                checkpoint_score_attribute=c.checkpoint_score_attribute,
                checkpoint_score_order=c.checkpoint_score_order,
            ),
            # The users' UserCallbacks run in the ledger, which sees every round; V2's
            # controller tells it of every failure it sees (see EngineFailures).
            callbacks=[EngineFailures(job.ledger), *([groups.RegisterGroups(watcher)] if watcher is not None else [])],
            **({"worker_runtime_env": r.worker_runtime_env} if releases.WORKER_RUNTIME_ENV else {}),
            **({"logging_config": r.logging_config} if releases.LOGGING_CONFIG else {}),
        )
        backend_config = releases.v2_backend_config(job.framework.config_for(job.backend_config, V2), bool(s.use_gpu))
        trainer = job.framework.trainer_class(V2)(
            job.train_fn,
            train_loop_config=job.train_loop_config,
            **{job.framework.config_arg: backend_config},
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
            **({"validation_config": job.validation_config} if releases.VALIDATION else {}),
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
        """Without a storage path of its own, the run goes in the trial's directory."""
        return run if run.storage_path is not None else dataclasses.replace(run, name="train", storage_path=trial_dir)

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
        if not job.other_callbacks or self.storage is None:
            return None
        rows = v1_logs.V1Rows(**self.row_params)
        return TuneCallbacks(job.other_callbacks, job.ledger, self.storage, rows, dict(self.row_params["config"]))

    def _v1_rows(self, snapshot: LedgerSnapshot) -> list[dict[str, Any]]:
        """Rank 0's rows as the live logs wrote them (same maker, same rounds, same order)."""
        assert self.rows is not None
        maker = v1_logs.V1Rows(**self.row_params)
        by_key = group_rounds(snapshot.records)
        return [maker.round_row(by_key[key]) for key in sorted(by_key) if len(by_key[key]) == snapshot.world_size]

    def result_parts(
        self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None
    ) -> ResultParts:
        rows = self._v1_rows(snapshot) if self.rows is not None else None
        if rows and self.storage is not None:
            v1_logs.repair_progress_csv(self.storage)  # the live CSV has the first row's columns only
        if self.mode.keeps_every_report:
            return self._v1_parts(raw, snapshot, rows or [])
        return self._v2_parts(raw, snapshot, rows)

    def _v2_parts(self, raw: Any, snapshot: LedgerSnapshot, v1_rows: list[dict[str, Any]] | None) -> ResultParts:
        """V2's semantics: the kept checkpoints' metrics (V1's rows with ``keep_v1_logs``)."""
        rounds = snapshot.rounds()
        if raw is None:
            outcome = V2Semantics().outcome(rounds, keep_v1_logs=v1_rows is not None)
            frame_rows = v1_rows or outcome.dataframe_rows
            frame = pd.DataFrame(frame_rows) if frame_rows else None
            return ResultParts(outcome.result_metrics, self._run_path(), frame)
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
        return ResultParts(metrics, raw.path, frame, best, reported, rounds)

    def _v1_parts(self, raw: Any, snapshot: LedgerSnapshot, rows: list[dict[str, Any]]) -> ResultParts:
        """V1's semantics: every report of rank 0, as V1's engine gives them."""
        rounds = snapshot.rounds()
        by_dir = {r.checkpoint_dir_name: r for r in rounds if r.checkpoint_dir_name}
        # No report at all: V1's engine gives no dataframe for a failed run, an empty one for a
        # finished run (below, with its auto-filled keys as metrics).
        frame = validated_dataframe(self._progress_frame(rows), rounds) if rows else None
        if raw is None:
            return ResultParts(dict(rows[-1]) if rows else {}, self._run_path(), frame)
        row_of = {row["checkpoint_dir_name"]: row for row in rows if row.get("checkpoint_dir_name")}
        kept, statuses = ledger_validated(list(raw.best_checkpoints or []), rounds)
        # V1's kept checkpoints carry their report's row (auto-filled keys), validated.
        best = [(c, {**row_of.get(checkpoint_dir_name(c), {}), **m}) for c, m in kept]
        reported = [ReportedCheckpoint(c, m, r.status) for (c, m), r in zip(best, statuses, strict=True)]
        assert self.rows is not None  # set by prepare()
        # Tune's tag of the one trial; no report: V1's auto-filled keys alone.
        last = {**rows[-1], "experiment_tag": "0"} if rows else self.rows.finished_without_reports(time.time())
        last_round = by_dir.get(str(last.get("checkpoint_dir_name"))) if last else None
        return ResultParts(
            metrics=merge_validation(last, last_round.validation) if last and last_round else last,
            path=raw.path,
            metrics_dataframe=frame if frame is not None else pd.DataFrame(),
            best_checkpoints=best,
            reported_checkpoints=reported,
        )

    def _run_path(self) -> str:
        return self.storage.run_dir if self.storage is not None else ""

    def _progress_frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        """The dataframe as V1 builds it: read back from ``progress.csv`` (nested keys
        flattened to ``a/b``, values as the CSV gives them)."""
        text = self.storage.read_text(v1_logs.PROGRESS_CSV) if self.storage is not None else None
        return pd.read_csv(io.StringIO(text)) if text else pd.DataFrame(rows)


def _v1_trial(
    run: RunConfig, trainer_name: str, start_time: float, restored: dict[str, str]
) -> tuple[RunStorage, RunConfig, str]:
    """The run as V1's trial: ``<storage>/<experiment>/<Trainer>_<id>_00000_0_<date>``, a new
    one per ``fit()`` (the ``restored`` one after ``restore()``), its experiment directory and
    its trial id (``<id>_00000``)."""
    stamp = datetime.fromtimestamp(start_time).strftime("%Y-%m-%d_%H-%M-%S")
    experiment = run.name or f"{trainer_name}_{stamp}"
    trial_id = restored.get("id") or f"{uuid.uuid4().hex[:5]}_00000"
    name = restored.get("name") or f"{trainer_name}_{trial_id}_0_{stamp}"
    root = storage.root(run.storage_path, run.storage_filesystem)
    trial = dataclasses.replace(run, name=name, storage_path=posixpath.join(root, experiment))
    return storage.resolve(run.storage_path, run.storage_filesystem, experiment), trial, trial_id


def _tune_report(metrics: dict[str, Any], checkpoint: Any = None) -> None:
    """``ray.tune.report`` with the checkpoint as Tune's own class: Ray warns that a
    ``ray.train.Checkpoint`` "should be imported from ray.tune", and here compat, not the user,
    hands it over (Rays before ``ray.tune.Checkpoint`` take the train class)."""
    import ray.tune

    tune_checkpoint = getattr(ray.tune, "Checkpoint", None)
    if checkpoint is not None and tune_checkpoint is not None and not isinstance(checkpoint, tune_checkpoint):
        checkpoint = tune_checkpoint(checkpoint.path, filesystem=checkpoint.filesystem)
    ray.tune.report(metrics, checkpoint=checkpoint)


def _next_checkpoint_number(trial: RunStorage) -> int:
    """One past the highest ``checkpoint_00000N`` in a trial directory (V1 numbers on)."""
    numbered = restore.numbered_checkpoints(trial)
    return numbered[-1][0] + 1 if numbered else 0


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
