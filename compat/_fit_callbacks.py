"""What a ``fit()`` leaves beside its result, as callbacks: the way Ray V2's trainer builds its
features (``DataParallelTrainer._create_default_callbacks``), each a small class with no-op hooks
in one default list (:func:`default_callbacks`), called by the trainer at three points of its fit:

- :meth:`FitCallback.before_run`: the run's services are started, the engine has not run yet;
- :meth:`FitCallback.after_trial_stopped`: Ray Tune ended the trial at a report (its process
  ends next: nothing after this runs);
- :meth:`FitCallback.after_fit`: the result is built and what ``fit()`` raises is known.

None decides how a run goes and none may cost the result: each keeps its own errors (warned
about). The files they leave are described in docs/readiness.md (the readiness record),
docs/compare.md (compare's record) and docs/architecture.md (the restore state, the stored
reports). What each writes is done by :mod:`compat._bookkeeping` and :mod:`compat._capture`.
"""

from __future__ import annotations

import functools
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compat import _bookkeeping as bookkeeping
from compat import _capture as capture
from compat_core import config, messages
from compat_core.files.storage import RunStorage
from compat_core.migration import usage, where
from compat_core.migration.usage import Usage, UsageLog
from compat_core.run.engine import Engine, TrainJob
from compat_core.semantics import restore
from compat_core.semantics.records import LedgerSnapshot
from compat_core.semantics.result import Result
from compat_core.semantics.rounds import ReportRound

if TYPE_CHECKING:
    from compat._failures import Failure


@dataclass(frozen=True)
class FitStart:
    """A fit whose services are started: what every hook before the engine's end sees."""

    trainer: Any  # the compat trainer (its arguments, its restore spec, its Tune trial's names)
    engine: Engine
    in_trial: bool  # a Ray Tune trial (the trainer given to a Tuner)
    job: TrainJob  # the run ledger, the prepared storage, what the workers are told
    call_site: str  # the user's line that called fit() (a trial's: the line that gave it to Tune)
    start_time: float
    driver_usages: list[Usage]  # the V1-only behaviours the driver relied on while starting
    trial_dir: RunStorage | None  # a Ray Tune trial's directory (None outside Tune)

    @property
    def call(self) -> capture.FitCall:
        """This fit as compare names it."""
        trainer = self.trainer
        trial = trainer.__dict__.get("_tune_trial")
        name = config.given_name(trainer.run_config)
        return capture.FitCall(trainer._framework.trainer_name, name, self.call_site, trial, self.start_time)


@dataclass(frozen=True)
class FitEnd:
    """A fit whose result is built: what :meth:`FitCallback.after_fit` sees."""

    start: FitStart
    outcome: Result
    snapshot: LedgerSnapshot  # everything the run ledger recorded
    error: BaseException | None  # what the engine raised (None: it returned)
    failure: Failure | None  # what fit() raises (None: it returns the result)
    log: UsageLog  # the fit's V1-only behaviours, the result's ``v1_usage``
    run_storage: RunStorage | None  # the run's directory (None when the engine left none)
    earlier: bookkeeping.Journals  # the journals of a restored run's earlier drivers
    killed: list[ReportRound]  # the validations of those killed before their fit() ended

    @property
    def raised(self) -> BaseException | None:
        return None if self.failure is None else self.failure.error

    @property
    def path(self) -> str:
        """The run's path as its records name it (a trial's directory in a Tune sweep)."""
        trial_dir = self.start.trial_dir
        return trial_dir.run_dir if trial_dir is not None else self.outcome.path or ""

    @property
    def record_at(self) -> RunStorage | None:
        """Where the run's records go: a run that failed before its directory was known leaves
        them in the experiment's."""
        return self.start.trial_dir or self.run_storage or self.start.job.prepared.experiment

    @property
    def flipped(self) -> bool:
        """V2's semantics: the reads of the result the flip changed are V1-only behaviours."""
        return not self.start.engine.mode.keeps_every_report


class FitCallback:
    """A side product of a fit. Every hook does nothing unless a subclass says otherwise."""

    def before_run(self, start: FitStart) -> None:
        """The run's services are started; the engine runs next."""

    def after_trial_stopped(self, start: FitStart) -> None:
        """Ray Tune ended the trial at a report: its process ends next."""

    def after_fit(self, end: FitEnd) -> None:
        """The result is built; ``end.failure`` is what ``fit()`` raises next (None: returns)."""


class RestoreState(FitCallback):
    """What ``restore()`` builds the trainer again from, in the experiment directory (as V1
    writes ``trainer.pkl``), with where this run's ledger journals what it is told (a driver
    killed before ``fit()`` ends stores no worker reports: its restore reads them there). A Tune
    trial is restored by Tune (``Tuner.restore``): none is saved for it. A trainer that cannot
    be pickled trains on, unrestorable, and says so; one whose training function cannot be
    pickled says nothing: Ray refuses the run with its own error."""

    def before_run(self, start: FitStart) -> None:
        prepared, ledger, trainer = start.job.prepared, start.job.ledger, start.trainer
        if start.in_trial or prepared.experiment is None:
            return
        own = ((socket.gethostname(), ledger.journal_path),) if ledger.journal_path else ()
        journals = bookkeeping.earlier_journals(trainer._restoring) + own
        state = restore.TrainerState(type(trainer), trainer._init_arguments, prepared.trial, journals)
        try:
            restore.save(prepared.experiment, state)
        except Exception as exc:  # pickling runs the user's objects' code
            if _pickles(trainer.train_loop_per_worker):
                where.warn(messages.cannot_save_for_restore(type(trainer).__name__, exc), UserWarning)


class TrialRecord(FitCallback):
    """A Ray Tune trial's readiness record before its ``fit()`` returns: Tune may end the trial
    at any report, and then its process, before compat's code runs again. Its record is written
    as it starts (``unfinished``), kept up to date by the run's ledger as the workers rely on
    V1-only behaviours, and written as ``stopped`` when Tune ends it; :class:`ReadinessRecord`
    replaces it when ``fit()`` returns."""

    def before_run(self, start: FitStart) -> None:
        if start.trial_dir is None:
            return
        record = self._keep(start, "unfinished", start.driver_usages)
        usages = bookkeeping.TrialUsages(start.trial_dir, record, tuple(start.driver_usages))
        start.job.ledger.keep_usages_with(usages)

    def after_trial_stopped(self, start: FitStart) -> None:
        assert start.trial_dir is not None  # only a trial is stopped by Tune
        workers = bookkeeping.usages_so_far(start.job.ledger)
        kept = bookkeeping.kept_for(start.trial_dir)
        self._keep(start, "stopped", bookkeeping.stopped_usages(start.driver_usages, workers, kept))

    @staticmethod
    def _keep(start: FitStart, ended: str, usages: list[Usage]) -> Any:
        record = bookkeeping.trial_record(
            start.trainer, start.engine, start.trial_dir, start.call_site, start.start_time, ended, usages
        )
        assert record is not None
        return record


class StoredWorkerReports(FitCallback):
    """Every worker's reports stored with the run (``Result.from_path``), those of a restored
    run's killed drivers first; the result's ``worker_metrics_dataframe`` is read from the file
    at the user's first read (no memory till then)."""

    def after_fit(self, end: FitEnd) -> None:
        stored = bookkeeping.keep_worker_reports(end.run_storage, end.snapshot, end.earlier, end.killed)
        if stored is not None:
            end.outcome.read_later(
                "worker_metrics_dataframe", functools.partial(bookkeeping.read_stored_reports, *stored)
            )


class ReadinessRecord(FitCallback):
    """The run's readiness record (docs/readiness.md), appended to its directory: what this fit
    relied on and how it ended. :class:`WatchedReads` appends it again as the user reads."""

    def __init__(self) -> None:
        self.record: Any = None  # the record kept by the last fit (None before one ends)

    def after_fit(self, end: FitEnd) -> None:
        start = end.start
        raised = end.raised
        error_text = None if raised is None else f"{type(raised).__name__}: {raised}"
        self.record = bookkeeping.readiness_record(
            start.trainer,
            start.engine,
            end.path,
            end.outcome.v1_usage,
            start.call_site,
            start.start_time,
            bookkeeping.ended(raised),
            error_text,
        )
        bookkeeping.keep_readiness_record(end.record_at, self.record)


class CompareRecord(FitCallback):
    """This fit's record for ``python -m compat compare`` when ``COMPAT_CAPTURE_DIR`` is set: a
    trial's is written as it starts (Tune may end it), and replaced by the fit's as it ends."""

    def __init__(self) -> None:
        self.path: str | None = None  # where the record is (None: not written)

    def before_run(self, start: FitStart) -> None:
        self.path = capture.reserve()
        if start.trial_dir is not None:
            capture.unfinished(self.path, start.engine.mode.backend, start.call)

    def after_fit(self, end: FitEnd) -> None:
        seconds = time.time() - end.start.start_time
        # What fit() raises, as the user sees it (compare's record of the error), not the engine's.
        error = end.raised if end.error is not None else None
        self.path = capture.capture(end.outcome, seconds, error, end.start.call, path=self.path)


class WatchedReads(FitCallback):
    """The user's reads of the result after ``fit()`` returns, where the other semantics give
    otherwise (``metrics_dataframe``, V1's auto-filled ``metrics`` keys): each is a V1-only
    behaviour, added to the result's usage, to the run's readiness record and to compare's."""

    def __init__(self, readiness: ReadinessRecord, compare: CompareRecord) -> None:
        self.readiness = readiness
        self.compare = compare

    def after_fit(self, end: FitEnd) -> None:
        v1_logs = end.start.job.run.keep_v1_logs
        difference = bookkeeping.frame_difference(end.outcome, end.snapshot, flipped=end.flipped, v1_logs=v1_logs)
        kept = bookkeeping.ReadsKept(end.log, self.readiness.record, end.record_at, self.compare.path)
        bookkeeping.watch_reads(end.outcome, difference, kept, flipped=end.flipped)


class FitWarnings(FitCallback):
    """The warnings a fit gives as it returns: the ledger's host lost during a run that
    completed, the workers' V1-only behaviours (under V2's semantics: once each), and every
    metric that was NaN or infinite."""

    def after_fit(self, end: FitEnd) -> None:
        snapshot = end.snapshot
        if snapshot.host_lost is not None and end.failure is None:
            where.warn(messages.ledger_host_lost(snapshot.host_lost, "the run completed"), UserWarning)
        if end.start.engine.mode.warns_v1_only:
            usage.warn_for_workers(snapshot.usages)
        bookkeeping.warn_non_finite(snapshot)


def default_callbacks() -> list[FitCallback]:
    """Every side product of a fit, in the order they run (the stored reports first: the other
    records read the result they make readable; the reads watched after the records they append
    to; the warnings last, as ``fit()`` returns)."""
    readiness, compare = ReadinessRecord(), CompareRecord()
    return [
        RestoreState(),
        TrialRecord(),
        StoredWorkerReports(),
        readiness,
        compare,
        WatchedReads(readiness, compare),
        FitWarnings(),
    ]


def _pickles(value: Any) -> bool:
    """Whether Ray can pickle ``value`` (as it pickles a training function for its workers)."""
    from ray import cloudpickle

    try:
        cloudpickle.dumps(value)  # type: ignore[no-untyped-call]  # Ray's cloudpickle is untyped
    except Exception:
        return False
    return True
