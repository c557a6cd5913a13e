"""V1's semantics on Ray's V2 engine (``Mode(V1, V2)``): what a run on V1's engine gives,
from a run on V2's, for the day Ray ships no V1 engine.

Every report is kept (compat's ledger sees every round); ``result.metrics`` is the last report
and ``metrics_dataframe`` one row per report of rank 0, both with V1's auto-filled keys;
``progress.csv``, ``result.json`` and TensorBoard events are written live into a V1-style trial
directory, ``<storage>/<experiment>/<Trainer>_<id>_00000_0_<date>``, a new one per ``fit()`` as
V1's; checkpoints are named ``checkpoint_00000N``; compat's ledger runs checkpoint validation as
on V1's engine. The run itself is V2's (:class:`v2.backend.V2Engine`). The differences that
remain are in docs/compatibility.md §28.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import traceback
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from ray.exceptions import RayTaskError

from compat_core import config, messages
from compat_core.config import RunConfig, given_name
from compat_core.files import storage
from compat_core.files.storage import RunStorage, checkpoint_dir_name
from compat_core.migration import usage, where
from compat_core.releases import adapters
from compat_core.run.engine import PreparedRun, TrainJob
from compat_core.semantics import restore, v1_logs
from compat_core.semantics.records import LedgerSnapshot
from compat_core.semantics.restore import RestoreSpec
from compat_core.semantics.result import (
    ReportedCheckpoint,
    ResultParts,
    last_report_validated,
    ledger_validated,
    validated_dataframe,
)
from compat_core.switch import V1, Mode
from v2.backend import SNAPSHOT_FILE, V2Engine, V2Prepared, prepared_of, resolved_run_config, run_name_and_dir, run_path
from v2.worker import V2WorkerSide

PARAMS_JSON = "params.json"  # the trial's config, as V1 writes it


class V1OnV2Engine(V2Engine):
    """Ray's V2 engine running V1's semantics: V2's run, V1's trial directory and results."""

    def __init__(self, mode: Mode) -> None:
        assert mode.semantics is V1, f"not V1's semantics: {mode}"
        super().__init__(mode)
        self.ledger_runs_validation = True  # V1 has no validation of its own: compat's ledger runs it

    def worker_side(self, prepared: PreparedRun) -> V1OnV2WorkerSide:
        return V1OnV2WorkerSide(self.mode, prepared_of(prepared).artifacts)

    def run(self, job: TrainJob, watcher: Any = None) -> Any:
        """V2's run, with what V1's engine hands its run from the driver's environment: V2's
        controller makes the run's directory and its workers upload checkpoints, each in a
        process of its own, where object-store credentials the driver set after Ray started
        (V1's engine passes them on to its trial and workers) would otherwise be missing."""
        refused = config.refused_local_directory_variable() or config.refused_checkpoint_options(
            job.run, job.consumed_options
        )
        if refused is not None:  # as V1's engine refuses them (in this order), before any worker starts
            raise refused
        with adapters.v2_controller_also_gets(adapters.v1_trial_env_vars()):
            return super().run(job, watcher)

    def prepare(
        self,
        run: RunConfig,
        v1_config: dict[str, Any],
        start_time: float,
        trainer_name: str,
        restoring: RestoreSpec | None = None,
    ) -> V2Prepared:
        run = resolved_run_config(run, restoring)
        if restoring is None:
            # the experiment directory, as on V1's engine
            usage.note_rerun_same_name(given_name(run), run.storage_path, run.storage_filesystem, self.mode)
            trial = {}
        else:
            trial = restoring.state.trial
            if not trial:  # V1's engine wrote it: its newest trial goes on
                newest = restore.latest_v1_trial(restoring.experiment)
                trial = restore.trial_of(newest) if newest else {}
        experiment, run, trial_id = _v1_trial(run, trainer_name, start_time, trial)
        run_name, trial_dir = run_name_and_dir(run)
        start = None
        if restoring is not None and trial_dir.exists(KEPT_SNAPSHOT):  # V2's engine resumes from it
            trial_dir.filesystem.move(trial_dir.path(KEPT_SNAPSHOT), trial_dir.path(SNAPSHOT_FILE))
        if restoring is not None and not trial_dir.exists(SNAPSHOT_FILE):
            # Nothing of V2's to resume (V1's engine wrote it: the switch flipped): the trial
            # goes on from its latest checkpoint.
            start = restore.latest_checkpoint(trial_dir)
        # V1's trial id and config: the trainer's train_loop_config when it was given one (``None``
        # stays ``None``, as in V1's rows), else none (raw V1's params.json: {}).
        config = dict(v1_config)
        row_params: dict[str, Any] = {"start_time": start_time, "config": config, "trial_id": trial_id}
        rows = v1_logs.V1Rows(**row_params)
        first_index = logged_before = 0
        if restoring is not None:  # the trial goes on: its logs and numbering too
            logged = trial_dir.read_text(v1_logs.RESULT_JSON) or ""
            rows.continue_after(logged)
            logged_before = v1_logs.count_rows(logged)
            first_index = _next_checkpoint_number(trial_dir)
        else:
            v1_logs.set_aside(trial_dir)
        trial_dir.write_text(PARAMS_JSON, json.dumps(config, indent=2, sort_keys=True, default=repr))
        return V2Prepared(
            experiment=experiment,
            trial={"name": run_name, "id": trial_id},
            first_checkpoint_index=first_index,
            start_checkpoint=start,
            run_name=run_name,
            storage_path=run.storage_path,
            storage_filesystem=run.storage_filesystem,
            storage=trial_dir,
            rows=rows,
            row_params=row_params,
            logged_before=logged_before,
            sync_period_s=v1_logs.sync_period_s(run.sync_config),
            artifacts=TrialArtifacts.of(run.sync_config, trial_dir, run_name),
        )

    def result_parts(
        self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None
    ) -> ResultParts:
        """V1's semantics: every report of rank 0, as V1's engine gives them."""
        p = prepared_of(job)
        _leave_trial_dir_as_v1(p.storage, error if raw is None else None)
        logged = self._logged(p)
        assert logged is not None and p.rows is not None  # prepare() gave the run V1's logs
        config = p.row_params["config"]
        digest = snapshot.digest
        rounds = snapshot.validated_rounds  # what a checkpoint's validation changed (earlier fits' too)
        by_dir = {r.checkpoint_dir_name: r for r in rounds if r.checkpoint_dir_name}
        # The last row as the logs hold it, with rank 0's metrics as reported (when the logs
        # have every round: a round sink that failed may have written fewer).
        last_row = logged.last
        if last_row is not None and digest.last_rank0 is not None and logged.count == digest.complete_rounds:
            last_row = v1_logs.with_values(last_row, digest.last_rank0.metrics, config)
        # No report at all: V1's engine gives no dataframe for a failed run, an empty one for a
        # finished run (below, with its auto-filled keys as metrics).
        frame = self._logged_frame(p, logged) if logged.count else None
        frame = validated_dataframe(frame, rounds) if frame is not None else None
        if raw is None:
            return ResultParts(dict(last_row) if last_row else {}, run_path(p), frame)
        kept, statuses = ledger_validated(list(raw.best_checkpoints or []), rounds)
        # V1's kept checkpoints carry their report's row (auto-filled keys), validated.
        best = [(c, {**self._checkpoint_row(logged, by_dir, checkpoint_dir_name(c), config), **m}) for c, m in kept]
        reported = [ReportedCheckpoint(c, m, r.status) for (c, m), r in zip(best, statuses, strict=True)]
        # Tune's tag of the one trial; no report: V1's auto-filled keys alone.
        last = {**last_row, "experiment_tag": "0"} if last_row else p.rows.finished_without_reports(time.time())
        return ResultParts(
            metrics=last_report_validated(last, rounds),
            path=raw.path,
            metrics_dataframe=frame if frame is not None else pd.DataFrame(),
            best_checkpoints=best,
            reported_checkpoints=reported,
        )

    @staticmethod
    def _checkpoint_row(
        logged: v1_logs.LoggedRows, by_dir: dict[str, Any], name: str, config: dict[str, Any]
    ) -> dict[str, Any]:
        """The row of the round that wrote checkpoint ``name``, as the logs hold it, with rank 0's
        metrics as reported; none when the logs do not have it."""
        row = logged.by_checkpoint.get(name)
        if row is None:
            return {}
        round_ = by_dir.get(name)
        return v1_logs.with_values(row, round_.rank0_metrics if round_ is not None else {}, config)


class V1OnV2WorkerSide(V2WorkerSide):
    """Inside a worker: checkpoints get V1's names, ``checkpoint_00000N`` numbered across
    attempts, and compat's ledger validates them, as on V1's engine."""

    def __init__(self, mode: Mode, artifacts: TrialArtifacts | None = None) -> None:
        super().__init__(mode)
        self.validates_in_ledger = True
        self.next_checkpoint_index = 0  # from start(), for the session's attempt
        self.artifacts = artifacts
        self._synced_at = 0.0
        self._uploads = False  # this worker uploads its node's working directory (local rank 0)

    def start(self, session: Any) -> None:
        super().start(session)
        self.next_checkpoint_index = session.settings.ledger.next_checkpoint_index(session.attempt)
        if self.artifacts is not None:
            os.chdir(self.artifacts.enter())
            self._uploads = self.context().get_local_rank() == 0
            self._synced_at = time.monotonic()

    def _after_report(self, with_checkpoint: bool) -> None:
        """V1's artifact sync: after a report with a checkpoint (``sync_artifacts_on_checkpoint``),
        else once ``sync_period`` has passed since the last."""
        a = self.artifacts
        if a is None or not self._uploads:
            return
        if (with_checkpoint and a.on_checkpoint) or time.monotonic() - self._synced_at >= a.period_s:
            self._sync()

    def finish(self) -> None:
        """The training function ended (returned or raised): its artifacts are uploaded."""
        if self.artifacts is not None and self._uploads:
            self._sync()

    def _sync(self) -> None:
        assert self.artifacts is not None
        self._synced_at = time.monotonic()
        try:
            self.artifacts.upload()
        except Exception as exc:  # the storage's error must not end training
            where.warn(messages.cannot_upload_artifacts(self.artifacts.trial_dir, exc), UserWarning)

    def _default_checkpoint_dir_name(self, context: Any) -> str:
        return f"checkpoint_{self.next_checkpoint_index:06d}"  # V1's; rank 0's name wins

    def _checkpoint_round_reached_ray(self) -> None:
        self.next_checkpoint_index += 1


@dataclass
class TrialArtifacts:
    """V1's trial artifacts on V2's engine (``SyncConfig(sync_artifacts=True)``): each worker runs
    in a working directory of its trial (V1's ``working_dirs/<trial>``, under the directory V2's
    engine gives its workers), whose files are uploaded to the trial directory after a report
    with a checkpoint (``sync_artifacts_on_checkpoint``), every ``sync_period`` and when the
    training function ends, by one worker per node (the node's workers share it), as V1's
    engine syncs them."""

    trial_dir: RunStorage
    trial_name: str
    on_checkpoint: bool
    period_s: float
    local: str | None = None  # the working directory, in the worker (enter())

    @classmethod
    def of(cls, sync_config: Any, trial_dir: RunStorage, trial_name: str) -> TrialArtifacts | None:
        if sync_config is None or not getattr(sync_config, "sync_artifacts", False):
            return None  # V1's default: artifacts stay on the workers' nodes
        on_checkpoint = bool(getattr(sync_config, "sync_artifacts_on_checkpoint", True))
        return cls(trial_dir, trial_name, on_checkpoint, v1_logs.sync_period_s(sync_config))

    def enter(self) -> str:
        """This worker's working directory for the trial (made), under V2's for the run."""
        self.local = os.path.join(os.getcwd(), "working_dirs", self.trial_name)
        os.makedirs(self.local, exist_ok=True)
        return self.local

    def upload(self) -> None:
        """The working directory's files, copied into the trial directory (none: nothing)."""
        import pyarrow.fs as pafs

        if self.local is None or not any(os.scandir(self.local)):
            return
        pafs.copy_files(
            self.local,
            self.trial_dir.run_dir,
            source_filesystem=pafs.LocalFileSystem(),
            destination_filesystem=self.trial_dir.filesystem,
        )


def _v1_trial(
    run: RunConfig, trainer_name: str, start_time: float, restored: dict[str, str]
) -> tuple[RunStorage, RunConfig, str]:
    """The run as V1's trial: ``<storage>/<experiment>/<Trainer>_<id>_00000_0_<date>``, a new
    one per ``fit()`` (the ``restored`` one after ``restore()``), its experiment directory and
    its trial id (``<id>_00000``)."""
    stamp = datetime.fromtimestamp(start_time).strftime("%Y-%m-%d_%H-%M-%S")
    experiment = given_name(run) or f"{trainer_name}_{stamp}"
    trial_id = restored.get("id") or f"{uuid.uuid4().hex[:5]}_00000"
    name = restored.get("name") or f"{trainer_name}_{trial_id}_0_{stamp}"
    root = storage.root(run.storage_path, run.storage_filesystem)
    trial = dataclasses.replace(run, name=name, storage_path=storage.join(root, experiment))
    return storage.resolve(run.storage_path, run.storage_filesystem, experiment), trial, trial_id


# V2's engine keeps its checkpoint manager's state beside the checkpoints, where V1's trial
# directory has only ``checkpoint_NNNNNN`` (V1-era code finds them by ``checkpoint_*``): between
# runs it is kept under this name, and put back for V2's engine to resume a restored run.
KEPT_SNAPSHOT = ".compat_" + SNAPSHOT_FILE


def _leave_trial_dir_as_v1(trial: RunStorage | None, error: BaseException | None) -> None:
    """The trial directory after a run as V1's engine leaves it: V2's snapshot under
    :data:`KEPT_SNAPSHOT`; after a failure, V1's ``error.pkl`` (the failed worker's error, as
    V1 stores it) and ``error.txt``, which ``Result.from_path`` reads back."""
    if trial is None:
        return
    if trial.exists(SNAPSHOT_FILE):
        trial.filesystem.move(trial.path(SNAPSHOT_FILE), trial.path(KEPT_SNAPSHOT))
    if error is None:
        return
    import ray.cloudpickle

    dumps: Any = ray.cloudpickle.dumps  # untyped
    failures = getattr(error, "worker_failures", None) or {}
    failure = failures[min(failures)] if failures else error
    if failures and not isinstance(failure, RayTaskError):  # V1 stores the worker task's error
        failure, trace = adapters.user_exception(failure)  # the user's own (Ray 2.44 wraps it)
        if trace is None:
            trace = "".join(traceback.format_exception(type(failure), failure, failure.__traceback__))
        failure = RayTaskError("train_fn", trace, failure).as_instanceof_cause()  # type: ignore[no-untyped-call]
    try:  # stored as it loads back
        pickled = dumps(failure)
        ray.cloudpickle.loads(pickled)
    except Exception:  # an error that does not pickle: its text, as V1 stores an unpicklable one
        pickled = dumps(RuntimeError(str(failure)))
    trial.filesystem.create_dir(trial.run_dir, recursive=True)
    with trial.filesystem.open_output_stream(trial.path("error.pkl")) as f:
        f.write(pickled)
    trial.write_text("error.txt", str(failure))


def _next_checkpoint_number(trial: RunStorage) -> int:
    """One past the highest ``checkpoint_00000N`` in a trial directory (V1 numbers on)."""
    numbered = restore.numbered_checkpoints(trial)
    return numbered[-1][0] + 1 if numbered else 0
