"""Ray's V1 engine: compat's driver half for it, with what V1 users expect and Ray loses."""

from __future__ import annotations

import copy
import dataclasses
import os
import warnings
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from ray.exceptions import RayActorError, RayTaskError
from ray.tune import Callback
from ray.util.annotations import RayDeprecationWarning

from compat_core import config
from compat_core.config import RunConfig
from compat_core.files import storage
from compat_core.migration import usage
from compat_core.releases import adapters, facts
from compat_core.run.engine import PreparedRun, TrainJob
from compat_core.run.ledger import LedgerClient
from compat_core.semantics import restore, v1_logs
from compat_core.semantics.observed import V1Semantics
from compat_core.semantics.records import LedgerSnapshot
from compat_core.semantics.restore import RestoreSpec
from compat_core.semantics.result import ResultParts, last_report_validated, ledger_validated, validated_dataframe
from compat_core.switch import V1, Mode
from v1.worker import V1WorkerSide


@dataclass(frozen=True)
class V1Prepared(PreparedRun):
    """The run as compat hands it to Ray's V1 engine: Ray's name for it (given by compat when
    the run has none, so compat knows the experiment directory), its storage path, and the
    experiment Ray's own restore continues."""

    run_name: str | None = None
    storage_path: str | None = None
    restoring: RestoreSpec | None = None
    # Whether the trainer was given a train_loop_config: Ray's V1 trainer keeps the arguments
    # passed (BaseTrainer.__new__), and its trial config, params.json and Result.config with
    # them, so compat passes it on only when the user did (raw V1's config is {} otherwise).
    given_train_loop_config: bool = True


class V1Engine:
    """Ray's V1 engine running V1 semantics (the only mode it runs)."""

    ledger_runs_validation = True
    unscored_checkpoints_newest = facts.UNSCORED_CHECKPOINTS_NEWEST

    def __init__(self, mode: Mode) -> None:
        assert mode.engine is V1 and mode.keeps_every_report, f"Ray's V1 engine runs V1 semantics, not {mode}"
        self.mode = mode

    def worker_side(self, prepared: PreparedRun) -> V1WorkerSide:
        return V1WorkerSide()

    def prepare(
        self,
        run: RunConfig,
        v1_config: dict[str, Any],
        start_time: float,
        trainer_name: str,
        restoring: RestoreSpec | None = None,
    ) -> V1Prepared:
        # Ray's V1 engine numbers its checkpoints itself, across restores (first index 0).
        if restoring is not None:  # Ray's own restore continues the experiment at that path
            resumed = V1Prepared(
                experiment=restoring.experiment,
                run_name=restoring.name,
                storage_path=restoring.storage_path,
                restoring=restoring,
                given_train_loop_config="train_loop_config" in v1_config,
            )
            if restore.has_tune_state(restoring.experiment):
                return resumed
            # V2's engine wrote it (the switch flipped): a run of the same name starts from its
            # latest checkpoint, not by Ray's restore.
            start = restore.start_checkpoint(restoring.experiment)
            return dataclasses.replace(resumed, restoring=None, start_checkpoint=start)
        usage.note_rerun_same_name(config.given_name(run), run.storage_path, run.storage_filesystem, self.mode)
        # Ray's name for an unnamed run, given here so that compat knows the experiment directory.
        run_name = config.given_name(run) or f"{trainer_name}_{datetime.fromtimestamp(start_time):%Y-%m-%d_%H-%M-%S}"
        # Ray's RunConfig has already filled in its default when run() sets this on it: the
        # path is resolved here, as Ray's V1 RunConfig resolves it (RAY_STORAGE included).
        storage_path = storage.root(run.storage_path, run.storage_filesystem, os.environ.get("RAY_STORAGE"))
        experiment = storage.resolve(storage_path, run.storage_filesystem, run_name)
        return V1Prepared(
            experiment=experiment,
            run_name=run_name,
            storage_path=storage_path,
            given_train_loop_config="train_loop_config" in v1_config,
        )

    def round_sink(self, prepared: PreparedRun) -> Any:
        return None  # Ray's V1 engine writes its own logs as it goes

    def round_rows(self, prepared: PreparedRun, other_callbacks: list[Any]) -> Any:
        return None  # Ray's V1 engine makes its rows itself

    def ledger_consumers(self, prepared: PreparedRun, in_trial: bool, other_callbacks: list[Any]) -> tuple[str, ...]:
        return ()  # Ray's V1 engine feeds Tune and its callbacks itself

    def engine_env(self) -> dict[str, str]:
        return {}

    def in_trial(self, run: RunConfig, trial_dir: str) -> RunConfig:
        return run  # Ray's trainer-as-trainable puts the run in the trial itself

    def run(self, job: TrainJob) -> Any:
        prepared = job.prepared
        assert isinstance(prepared, V1Prepared), prepared
        arguments = ray_trainer_args(job)
        arguments["run_config"].name = prepared.run_name
        arguments["run_config"].storage_path = prepared.storage_path
        if prepared.start_checkpoint is not None:
            # A restored run's latest checkpoint is compat's choice, not the user's: Ray would
            # warn that resume_from_checkpoint is deprecated. The workers start from it instead
            # (V1WorkerSide.start: Ray's get_checkpoint() returns it).
            arguments["resume_from_checkpoint"] = None
        with warnings.catch_warnings():
            # Ray's warnings for the arguments were raised when the user's trainer was made
            # (compat's, as Ray's V1 trainer raises them): not again for this copy of it.
            warnings.simplefilter("ignore", RayDeprecationWarning)
            trainer = job.framework.trainer_class(V1)(**arguments)
        # compat's own Tune callback joins the experiment's configuration only (a copy): the
        # trainer's stored arguments, which its trial actor is built from, keep the user's, so
        # Ray's warning about Tune callbacks is not raised for one the user never passed.
        run = copy.copy(trainer.run_config)
        run.callbacks = [*(run.callbacks or []), EngineFailures(job.ledger)]
        trainer.run_config = run
        if prepared.restoring is not None:  # what Ray's V1 Trainer.restore(path) sets
            adapters.set_v1_restore_path(trainer, prepared.restoring.path, prepared.restoring.filesystem)
        global _running_ledger
        _running_ledger = job.ledger
        try:
            return trainer.fit()
        finally:
            _running_ledger = None

    def run_in_trial(self, job: TrainJob) -> Any:
        """Inside a Tune trial: Ray's own trainer-as-trainable path (what the trainable of
        ``BaseTrainer.as_trainable`` runs), so the trial behaves as a V1 Trainer's trial."""
        adapters.v1_train_coordinator()(
            ray_trainer_args(job), trainer_cls=job.framework.trainer_class(V1), metadata=job.metadata or {}
        )
        return None

    def trial_resources(self, scaling: Any) -> Any:
        """The trial's placement group: V1's trainer bundle (no CPU, see _ray_scaling) and
        one bundle per worker, as V1's ``TrainTrainable`` asks."""
        return _ray_scaling(scaling).as_placement_group_factory()

    def result_parts(
        self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None
    ) -> ResultParts:
        if raw is None:  # V1's engine gives no result: its frame, every round's row, is compat's
            outcome = V1Semantics().outcome(snapshot.rounds())
            frame = pd.DataFrame(outcome.dataframe_rows) if outcome.dataframe_rows else None
            return ResultParts(outcome.result_metrics, _failed_run_path(snapshot, job.prepared.experiment), frame)
        v1_logs.repair_progress_csv(storage.RunStorage(raw.filesystem, raw.path))
        rounds = snapshot.validated_rounds  # what a checkpoint's validation changed (earlier fits' too)
        best, reported = ledger_validated(list(raw.best_checkpoints or []), rounds)
        return ResultParts(
            metrics=last_report_validated(raw.metrics, rounds),
            path=raw.path,
            metrics_dataframe=validated_dataframe(raw.metrics_dataframe, rounds),
            best_checkpoints=best,
            reported_checkpoints=reported,
        )


def _ray_scaling(s: Any) -> Any:
    return config.ray_scaling_config(s, v2_engine=False)


def ray_trainer_args(job: TrainJob) -> dict[str, Any]:
    """The keyword arguments of Ray's V1 trainer for ``job``."""
    from ray.air.config import CheckpointConfig, FailureConfig, RunConfig

    r, c, f = job.run, job.run.checkpoint_config, job.run.failure_config
    run = RunConfig(
        name=config.given_name(r),
        storage_path=r.storage_path,
        storage_filesystem=r.storage_filesystem,
        failure_config=FailureConfig(max_failures=f.max_failures, fail_fast=bool(f.fail_fast)),
        checkpoint_config=CheckpointConfig(
            num_to_keep=c.num_to_keep,
            checkpoint_score_attribute=c.checkpoint_score_attribute,
            checkpoint_score_order=c.checkpoint_score_order,
            checkpoint_frequency=c.checkpoint_frequency or 0,
            checkpoint_at_end=c.checkpoint_at_end,
        ),
        sync_config=r.sync_config,
        verbose=r._verbose,  # as given: Ray's V1 RunConfig fills in its default and warns on a given one
        stop=r.stop,
        callbacks=job.other_callbacks or None,
        progress_reporter=r.progress_reporter,
        log_to_file=r.log_to_file or False,
    )
    given_config = not isinstance(job.prepared, V1Prepared) or job.prepared.given_train_loop_config
    return {
        "train_loop_per_worker": job.train_fn,
        **({"train_loop_config": job.train_loop_config} if given_config else {}),
        job.framework.config_arg: job.framework.config_for(job.backend_config, V1),
        "scaling_config": _ray_scaling(job.scaling),
        "run_config": run,
        "datasets": job.datasets,
        "dataset_config": job.dataset_config,
        "metadata": job.metadata,
        "resume_from_checkpoint": job.resume_from_checkpoint,
    }


def _failed_run_path(snapshot: LedgerSnapshot, experiment: storage.RunStorage | None) -> str:
    """A failed run's trial directory (Ray's V1 ``fit()`` raises without a result): its
    checkpoints' directory, else the experiment's newest trial with V1's logs."""
    if snapshot.digest.first_checkpoint is not None:
        return os.path.dirname(snapshot.digest.first_checkpoint.path)
    trial = restore.latest_v1_trial(experiment) if experiment is not None else None
    return experiment.path(trial) if experiment is not None and trial is not None else ""


class EngineFailures(Callback):
    """A Ray Tune callback on the driver that hands the ledger every failure of a worker
    process V1's engine sees: a worker that died without raising (``os._exit``, the OOM
    killer, a lost node) never reports its own, and ``after_exception`` must still follow.
    V1's trial fails with the dead actor's ``ActorDiedError`` (and Tune retries it under
    ``FailureConfig(max_failures)``); a Python exception a worker raised it reported itself."""

    def __init__(self, ledger: LedgerClient) -> None:
        self.ledger = ledger

    def __reduce__(self) -> Any:
        # Tune pickles its callbacks with the experiment (tuner.pkl) and a restored experiment
        # runs with the ones it unpickles, not the trainer's: those report to the ledger of
        # the run restoring it, not the dead driver's.
        return (_restored_engine_failures, ())

    def on_trial_recover(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._failed(trial)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self._failed(trial)

    def _failed(self, trial: Any) -> None:
        if self.ledger is None:
            return
        from ray import cloudpickle

        died = _dead_actor(_trial_error(trial))
        if died is not None:  # pickled: Ray takes a RayError argument for a failed input
            self.ledger.actor_died(died.actor_id, cloudpickle.dumps(died))  # type: ignore[no-untyped-call]


# The ledger of the run this driver process is running on V1's engine, while it runs.
_running_ledger: Any = None


def _restored_engine_failures() -> EngineFailures:
    """An experiment's failure callback as Tune unpickles it (``Tuner.restore``, inside a
    restored ``fit()``): bound to the run restoring it; inert anywhere else."""
    return EngineFailures(_running_ledger)


def _trial_error(trial: Any) -> BaseException | None:
    """The error Tune just recorded for ``trial``, from the trial's local directory (the
    storage copy comes later, with Tune's next sync)."""
    from ray import cloudpickle

    path = getattr(trial, "pickled_error_file", None)
    if not path or not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        error: BaseException | None = cloudpickle.load(f)
    return error


def _dead_actor(error: BaseException | None) -> RayActorError | None:
    """The ``RayActorError`` (``ActorDiedError``, ...) behind a trial's error, if one is: the
    dead actor's own, not the ``RayTaskError`` of the trial's task that carries it (whose
    ``actor_id`` is the trial's, and which Ray would not pass on as an argument)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, RayTaskError):
            error = error.cause
        elif isinstance(error, RayActorError):
            return error
        else:
            error = error.__cause__ or error.__context__
    return None
