"""What a ``fit()`` leaves beside its result for the sign-off: the run's readiness record
(docs/readiness.md), a Tune trial's usages kept as Tune may end its process at any report, the
workers' reports stored with the run (``Result.from_path``), journals of earlier drivers of a
restored run, and the reads of the result watched after ``fit()`` returns. The fit's
callbacks (compat/_fit_callbacks.py) and the result's build call these; none decides how a
run goes."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import posixpath
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from compat import _capture as capture
from compat.readiness import _record as readiness
from compat_core import config, messages
from compat_core.errors import CallbackError
from compat_core.files import journal
from compat_core.files.storage import RunStorage
from compat_core.migration import usage, where
from compat_core.migration.usage import Usage, UsageLog
from compat_core.run.engine import Engine
from compat_core.run.ledger import LedgerClient
from compat_core.run.ledger.host import journal_dir
from compat_core.semantics import reads, restore, validations, worker_reports
from compat_core.semantics.records import LedgerSnapshot, journaled_records, journaled_validations
from compat_core.semantics.result import Result
from compat_core.semantics.rounds import ReportRound
from compat_core.semantics.v1_logs import AUTO_KEYS


def readiness_record(
    trainer: Any,
    engine: Engine,
    path: str,
    usages: list[Usage],
    call_site: str,
    start_time: float,
    ended: str,
    error: str | None = None,
) -> readiness.RunRecord:
    """What this ``fit()`` (its run at ``path``) relied on, for the fleet's readiness report;
    ``ended``: one of ``readiness.OUTCOMES``."""
    import ray

    script = trainer.__dict__.get("_driver_script") or readiness.script_name()
    # A Tune trial's run counts under its sweep (the experiment), whatever it is named in it.
    run_name = trainer.__dict__.get("_tune_experiment") or config.given_name(trainer.run_config)
    return readiness.RunRecord(
        job=readiness.job_name(run_name, script),
        run=posixpath.basename(path.rstrip("/")),
        path=path,
        script=script,
        call_site=call_site,
        trainer=trainer._framework.trainer_name,
        ray_version=ray.__version__,
        compat_version=readiness.compat_version(),
        python_version=readiness.python_version(),
        mode=engine.mode.backend,
        engine=engine.mode.engine.value,
        started_at=start_time,
        ended_at=time.time(),
        outcome=ended,
        error=None if error is None else error[:2000],
        behaviours=readiness.behaviours(usages),
    )


def trial_record(
    trainer: Any,
    engine: Engine,
    trial_dir: RunStorage | None,
    call_site: str,
    start_time: float,
    ended: str,
    usages: list[Usage],
) -> readiness.RunRecord | None:
    """A Tune trial's readiness record before its fit() returns (``ended``: ``unfinished``
    when it starts, ``stopped`` when Tune ends it, with what the workers relied on till
    then), kept in the trial's directory."""
    if trial_dir is None:
        return None
    record = readiness_record(trainer, engine, trial_dir.run_dir, usages, call_site, start_time, ended)
    keep_readiness_record(trial_dir, record)
    return record


def run_storage(experiment: RunStorage | None, raw: Any, path: str | None) -> RunStorage | None:
    """The run's directory (``path``) on its own filesystem (None when the engine left none)."""
    filesystem = experiment.filesystem if experiment is not None else getattr(raw, "filesystem", None)
    if not path or filesystem is None:
        return None
    return RunStorage(filesystem, path)


def validations_left_in_journals(earlier: Journals) -> list[ReportRound]:
    """The outcomes of the validations in the journals of a restored run's earlier drivers killed
    before their ``fit()`` ended (on this node): read once, for this fit's result and to be
    stored with the run (:func:`keep_worker_reports`)."""
    rounds: list[ReportRound] = []
    for path in journals_on_this_node(earlier):
        try:
            rounds += journaled_validations(path)
        except Exception as exc:  # a journal this node cannot read must not cost the result
            where.warn(messages.cannot_read_journal(path, exc), UserWarning)
    return rounds


def earlier_validations(run: RunStorage | None, killed: list[ReportRound], *, trusted: bool) -> list[ReportRound]:
    """The outcomes of the validations compat's ledger ran in the run's earlier fits, for this
    fit's result: those stored with the run by each fit that ended, then ``killed``
    (:func:`validations_left_in_journals`). ``trusted``: the values are loaded as the run's restore
    state is (a restore trusts its storage); else as ``Result.from_path`` reads them."""
    if run is None:
        return []
    return validations.read(run, trusted) + killed


def keep_worker_reports(
    run: RunStorage | None, snapshot: LedgerSnapshot, earlier: Journals, killed: list[ReportRound]
) -> tuple[RunStorage, worker_reports.Stored] | None:
    """Every worker's reports, and the outcomes of the validations compat's ledger ran, stored
    with the run for ``Result.from_path``: the run and the name of this fit's reports file
    (None when there is none: a run that cannot store them keeps them in the result it
    returns). A restored run first stores those of earlier drivers killed
    before their ``fit()`` ended, from their ledgers' journals on this node (each removed once
    stored; one on another node stays there): ``killed``, their validations' outcomes
    (:func:`validations_left_in_journals`), then their reports."""
    if run is None:
        return None
    _keep_validations(run, killed)  # before their journals go
    try:
        for path in journals_on_this_node(earlier):
            worker_reports.write(run, functools.partial(journaled_records, path))
            with contextlib.suppress(OSError):
                os.remove(path)
        stored = worker_reports.write(run, snapshot.iter_records)
    except Exception as exc:  # the storage's error, whatever it is, must not cost the result
        where.warn(messages.cannot_keep_worker_reports(run.run_dir, exc), UserWarning)
        return None
    _keep_validations(run, snapshot.digest.checkpoint_rounds)
    return (run, stored) if stored is not None else None


def _keep_validations(run: RunStorage, rounds: list[ReportRound]) -> None:
    """The outcomes of ``rounds``' validations, stored with the run where Ray's files lack them
    (a storage that cannot take them is warned about: the reports are stored apart)."""
    try:
        validations.write(run, rounds)
    except Exception as exc:
        where.warn(messages.cannot_keep_validations(run.run_dir, exc), UserWarning)


def read_stored_reports(run: RunStorage, stored: worker_reports.Stored) -> Any:
    """This fit's stored reports as ``worker_metrics_dataframe`` (at the user's first read):
    trusted only while the file is the bytes this process wrote (else read as ``from_path``)."""
    try:
        return worker_reports.read_file(run, stored.name, written=stored)
    except OSError as exc:
        raise FileNotFoundError(messages.worker_reports_gone(run.path(stored.name), exc)) from exc


Journals = tuple[tuple[str, str], ...]  # (host, path) of run ledgers' journals


def earlier_journals(restoring: restore.RestoreSpec | None) -> Journals:
    """The journals of the earlier drivers of a restored run, whose reports may not be stored."""
    return tuple(restoring.state.journals) if restoring is not None else ()


def journals_on_this_node(journals: Journals) -> list[str]:
    """Those still on this node's disk: a driver killed during its ``fit()`` left them (a
    ``fit()`` that ended removed its own). Only journals in this user's private journal
    directory: the restore state is read from storage, and these files are read, then removed."""
    host = socket.gethostname()
    mine = journal_dir()
    return [
        path
        for name, path in journals
        if name == host
        and os.path.dirname(path) == mine
        and path.endswith(journal.JOURNAL_SUFFIX)
        and os.path.exists(path)
    ]


def keep_readiness_record(run: RunStorage | None, record: readiness.RunRecord) -> None:
    """The run's readiness record, appended to its directory (docs/readiness.md)."""
    if run is None:
        return
    try:
        run.append_text(readiness.RECORD_FILE, record.line())
    except Exception as exc:  # as for the worker reports: the result comes first
        where.warn(messages.cannot_keep_readiness_record(run.run_dir, exc), UserWarning)


def frame_difference(outcome: Result, snapshot: LedgerSnapshot, *, flipped: bool, v1_logs: bool) -> str:
    """What the other semantics' ``metrics_dataframe`` would hold otherwise, in words ("": the
    same). Under V2 (``flipped``) V1's frame is one row per complete round, nested metrics
    flattened; with ``keep_v1_logs`` the frame is V1's already."""
    digest = snapshot.digest
    if not flipped:
        return reads.frame_difference(outcome.metrics_dataframe, len(outcome.best_checkpoints or []), digest.rank0_keys)
    if v1_logs:
        return ""
    last = digest.last_rank0.metrics if digest.last_rank0 is not None else None
    return reads.flip_difference(outcome.metrics_dataframe, digest.complete_rounds, last)


@dataclass(frozen=True)
class ReadsKept:
    """Where a read of a result after ``fit()`` is recorded: the fit's usage log, its readiness
    record in the run's directory (``run``), and its record for compare (``captured``)."""

    log: UsageLog
    record: readiness.RunRecord
    run: RunStorage | None
    captured: str | None


def watch_reads(outcome: Result, difference: str, kept: ReadsKept, *, flipped: bool) -> None:
    """The user's first read of a ``metrics_dataframe`` the other semantics would build
    otherwise (``difference``, in words; "" when alike) is a V1-only behaviour, added to the
    result's usage and to its readiness record (appended again); so is each read of a
    ``result.metrics`` key V1 adds. Under V1 the run relies on V1 there; under V2 (``flipped``)
    the program reads what the flip changed: the same kinds, so a job's trend counts the same
    behaviours whichever way it ran."""

    def recorded_as(kind: str) -> Callable[[str, str], None]:
        def recorded(site: str, detail: str) -> None:
            kept.log.add(kind, site, detail=detail)
            outcome.v1_usage = kept.log.as_list()
            again = dataclasses.replace(kept.record, behaviours=readiness.behaviours(outcome.v1_usage))
            keep_readiness_record(kept.run, again)
            capture.usage_read(kept.captured, outcome)

        return recorded

    outcome.watch_reads(reads.ReadWatch(difference, recorded_as(reads.KIND)))
    if outcome.metrics is not None and (flipped or not AUTO_KEYS.isdisjoint(outcome.metrics)):
        outcome.metrics = reads.WatchedMetrics(outcome.metrics, recorded_as(reads.KEYS_KIND), flipped=flipped)


def ended(failure: BaseException | None) -> str:
    """A returned fit's outcome, for its readiness record."""
    if failure is None:
        return "succeeded"
    return "callback-failed" if isinstance(failure, CallbackError) else "failed"


def merged(*usages: Iterable[Usage]) -> list[Usage]:
    log = UsageLog()
    for part in usages:
        log.merge(part)
    return log.as_list()


@dataclass(frozen=True)
class TrialUsages:
    """A Tune trial's readiness record at its start (``record``, with the driver's behaviours),
    kept again by the run's ledger, in its host, each time the workers rely on a V1-only
    behaviour new to the run (``RunLedger.keep_usages_with``): Tune ends a trial's process at
    a report, and compat's code in it may not run again."""

    storage: RunStorage
    record: readiness.RunRecord
    driver: tuple[Usage, ...]

    def __call__(self, workers: list[Usage]) -> None:
        behaviours = readiness.behaviours(merged(self.driver, workers))
        keep_readiness_record(
            self.storage, dataclasses.replace(self.record, behaviours=behaviours, ended_at=time.time())
        )


def kept_for(trial: RunStorage) -> list[Usage]:
    """The behaviours the trial's last readiness record (its run's) already names."""
    try:
        records = readiness.parse_lines(trial.read_text(readiness.RECORD_FILE) or "")[0]
    except Exception:
        return []
    ours = [r for r in records if r.path == trial.run_dir]
    return [Usage(b.kind, b.count, b.first_site) for b in ours[-1].behaviours] if ours else []


def stopped_usages(driver: list[Usage], workers: list[Usage], kept: list[Usage]) -> list[Usage]:
    """What a trial Tune stopped relied on: the driver's and the workers' (the ledger's answer,
    which may not come in time), or, where it says more, what the trial's record already names
    (``kept``: the same uses, the driver's among them, counted when the ledger kept it)."""
    most = {u.kind: u for u in merged(driver, workers)}
    for u in kept:
        if u.kind not in most or u.count > most[u.kind].count:
            most[u.kind] = u
    return sorted(most.values(), key=lambda u: u.kind)


def usages_so_far(ledger: LedgerClient) -> list[Usage]:
    """What a trial's workers relied on till Tune stopped it; none when its ledger does not
    answer within a few seconds (Tune ends the trial's process soon after)."""
    try:
        return ledger.usages(timeout_s=5.0)
    except Exception:
        return []


def warn_non_finite(snapshot: LedgerSnapshot) -> None:
    """One warning per key that was NaN or infinite in any report of the run."""
    seen = snapshot.digest.non_finite
    for key in sorted(seen, key=lambda k: seen[k][1]):  # in report order
        count, (_, index, rank) = seen[key]
        first = f"worker {rank}, report {index}"
        where.warn(messages.non_finite_metric(key, count, first), usage.NonFiniteMetricWarning)
