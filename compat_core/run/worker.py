"""What runs inside each training worker around the user's training function.

The engine's :class:`compat_core.run.engine.WorkerSide` is chosen on the driver, once per run. It hooks the
engine's own report path, so every report reaches :meth:`WorkerSession.on_report` exactly
once, whichever door it came through; this module turns it into a ledger record.
"""

from __future__ import annotations

import inspect
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compat_core import settings, switch
from compat_core.migration import usage
from compat_core.run import channel
from compat_core.run.engine import EngineReport, WorkerSide
from compat_core.run.ledger import LedgerClient
from compat_core.run.ledger.run import ARRIVAL_TIMEOUT_S
from compat_core.semantics.records import Record

# A finishing worker waits ARRIVAL_TIMEOUT_S for the ledger to store the last records it wrote
# to the socket before it sends them again by actor calls: as long as the ledger waits for a
# finished worker's records (the same records on their way).
# A worker asks the ledger how far it has stored the records written to the socket (an actor
# call it does not wait for) after CONFIRM_EVERY records and CONFIRM_INTERVAL_S seconds, or
# after CONFIRM_AT_MOST records: it keeps at most about that many, and a fast worker pays an
# actor call (~0.5 ms) at most about once a second.
CONFIRM_EVERY = 256
CONFIRM_INTERVAL_S = 1.0
CONFIRM_AT_MOST = 4096
# A worker whose channel broke (the ledger's host died; Ray restarts it) asks the ledger for its
# socket again at most this often, sending its records by actor calls meanwhile.
RECONNECT_INTERVAL_S = 5.0


@dataclass
class WorkerSettings:
    """Decided on the driver at ``fit()`` and shipped with the training function."""

    mode: switch.Mode
    side: WorkerSide  # the engine's worker half
    ledger: LedgerClient
    env: dict[str, str]
    has_validation_config: bool
    keep_v1_logs: bool
    use_channel: bool = True  # workers write their records to the ledger's socket (else actor calls)
    # Routes ``ray.air.session.*`` to compat's functions while the training function runs;
    # returns the undo (the public package's, handed down: the core does not import it).
    route_air_session: Callable[[], Callable[[], None]] | None = None
    # Where the first attempt starts when the engine is not told: ``Trainer(resume_from_checkpoint=...)``
    # on V2's engine, a restored run's latest checkpoint on either.
    resume_from_checkpoint: Any = None
    # Inside a Tune trial every round is forwarded to Tune as a result: a report without a
    # checkpoint is kept there, in both modes, so it is no free-floating report V2 drops.
    in_tune_trial: bool = False


@dataclass
class CompatCall:
    """What ``compat.report`` knows about the report it is about to hand to the engine."""

    wants_validation: bool
    ledger_validation: Any = None  # v1: the request the ledger runs once the checkpoint is persisted
    metrics: dict[str, Any] | None = None  # what report() checked, its own copy: recorded as it is


@dataclass
class WorkerSession:
    settings: WorkerSettings
    side: WorkerSide
    rank: int
    world_size: int
    attempt: int = 0
    next_index: int = 0
    compat_call: CompatCall | None = None
    sender: channel.Sender | None = None
    address: channel.Address | None = None  # the ledger's record channel
    answers: channel.Answers | None = None  # where it writes the free-round decisions (from the first vote)
    pid: int = field(default_factory=os.getpid)
    _asked: Any = None  # the ledger's answer to stored_through, on its way
    _since_asked: int = 0  # records written to the socket since
    _asked_at: float = 0.0  # time.monotonic() then
    _answers_tried: bool = False  # whether the answer connection was opened for this channel
    _reconnect_at: float = -math.inf  # time.monotonic() when the worker last asked for a socket
    hostname: str = field(default_factory=socket.gethostname)

    @property
    def mode(self) -> switch.Mode:
        return self.settings.mode

    def vote_free_round(self, free: bool) -> bool:
        """Tell the ledger whether this rank's next report is free of checkpoints; a free
        rank waits for every rank's answer and learns whether the whole round is free. On the
        record channel the decision comes on the answer connection; one that does not come in
        time is asked for (the round is then not free if still open); a connection that
        broke (the ledger's host died), and the vote is cast again by an actor call."""
        ledger, index = self.settings.ledger, self.next_index
        if self.answers is None and not self._answers_tried and self.sender is not None and not self.sender.broken:
            self._answers_tried = True  # once per connection: one that fails means actor calls
            self.answers = channel.connect_answers(self.address, self.rank)
        answers, sender = self.answers, self.sender
        if answers is None or answers.broken or sender is None or not sender.vote(self.attempt, index, self.rank, free):
            return ledger.vote_free_round(self.attempt, index, self.rank, free)
        if not free:
            return False
        decision = answers.wait(self.attempt, index, ledger.vote_timeout_s)
        if decision is not None:
            return decision
        if answers.broken:
            return ledger.vote_free_round(self.attempt, index, self.rank, free)
        return ledger.settle_free_round(self.attempt, index, self.rank)

    def on_report(self, report: EngineReport) -> None:
        """The engine delivered a report of this worker: record it in the ledger."""
        call, self.compat_call = self.compat_call, None
        if not report.has_checkpoint and report.metrics and self.rank == 0 and not self.settings.in_tune_trial:
            usage.relied_on("free-floating-report", mode=self.mode)
        record = Record(
            rank=self.rank,
            index=self.next_index,
            metrics=report.metrics,
            has_checkpoint=report.has_checkpoint,
            wants_validation=call.wants_validation if call else bool(report.validation),
            timestamp=now(),
            checkpoint=report.checkpoint,
            checkpoint_dir_name=report.checkpoint_dir_name,
            attempt=self.attempt,
            source="compat" if call else "ray",
            usages=usage.take(),
            pid=self.pid,
            hostname=self.hostname,
        )
        self.next_index += 1
        job = None
        if call is not None and call.ledger_validation and report.checkpoint is not None:
            job = (report.checkpoint, call.ledger_validation)
        if job is None and self.sender is not None and self.sender.send((record, None), record.index):
            self._since_asked += 1
            if self._since_asked >= CONFIRM_EVERY and (
                self._since_asked >= CONFIRM_AT_MOST or time.monotonic() - self._asked_at >= CONFIRM_INTERVAL_S
            ):
                self._confirm()
            return
        if self.sender is not None and self.sender.broken:
            self.resend_unconfirmed()
            self._reconnect()
        self.settings.ledger.send_record(record, job)

    def _reconnect(self) -> None:
        """The channel broke (its host died and Ray restarted it, with a socket of its own):
        connect to the ledger's socket again, at most once per ``RECONNECT_INTERVAL_S``; until
        then, and if it cannot, records go by actor calls."""
        now = time.monotonic()
        if now - self._reconnect_at < RECONNECT_INTERVAL_S:
            return
        self._reconnect_at = now
        try:
            address = self.settings.ledger.open_channel()
        except Exception:  # the host is still restarting: next time
            return
        sender = channel.connect(address)
        if sender is not None:
            assert self.sender is not None
            self.sender.close()
            self.sender, self._asked, self._since_asked = sender, None, 0
            self.close_answers()
            self.address, self._answers_tried = address, False  # the next vote connects again
            channel.logger.info("compat's record channel reconnected to the ledger's restarted host")

    def close_answers(self) -> None:
        if self.answers is not None:
            self.answers.close()
            self.answers = None

    def _confirm(self) -> None:
        """Learn, without waiting, how far the ledger has stored this worker's records: the
        answer to the question asked last time, if it has come; then ask again."""
        import ray

        assert self.sender is not None
        if self._asked is not None:
            ready, _ = ray.wait([self._asked], timeout=0)
            if not ready:
                self._since_asked = CONFIRM_EVERY - 32  # look again in 32 records
                return
            try:
                self.sender.stored_through(ray.get(ready[0]))
            except Exception:  # the host died: the call is retried, or the run ends
                pass
        self._asked = self.settings.ledger.ask_stored_through(self.attempt, self.rank)
        self._since_asked, self._asked_at = 0, time.monotonic()

    def drain(self, timeout_s: float) -> None:
        """Before the worker's end: wait until the ledger has stored every record written to the
        socket; what it has not after ``timeout_s`` (its host died with them unread) is sent
        again by actor calls, which reach the ledger before the end (Ray runs one caller's
        calls in order)."""
        if self.sender is None:
            return
        deadline = time.monotonic() + timeout_s
        while self.sender.kept() and not self.sender.broken:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # Waits in the ledger until the records are read (a second at a time: the connection
            # may break meanwhile, and its host be restarted).
            wait_s = min(left, 1.0)
            self.sender.stored_through(
                self.settings.ledger.stored_through(self.attempt, self.rank, self.sender.needed(), wait_s)
            )
        self.resend_unconfirmed()

    def resend_unconfirmed(self) -> None:
        """The records written to the socket and not known to be stored, by actor calls: the
        connection broke (its host died: Ray delivers actor calls to the restarted one), or
        the worker ends with them unconfirmed. A record the ledger has counts once."""
        if self.sender is not None:
            for record, job in self.sender.unconfirmed():
                self.settings.ledger.send_record(record, job)


_session: WorkerSession | None = None


def reported_metrics(metrics: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """What the engine's hook on Ray's report records of ``metrics``, and whether compat's
    ``report()`` checked it: the dict ``report()`` checked and copied for the report being
    handed on now, as it is (a report is checked once and copied once); a dict given to Ray's
    own ``report`` (a module still on ``ray.train``), copied, as the caller may change it after."""
    call = _session.compat_call if _session is not None else None
    if call is not None and call.metrics is metrics:
        return metrics, True
    return dict(metrics), False


def current() -> WorkerSession | None:
    return _session


def driver_settings(
    mode: switch.Mode,
    side: WorkerSide,
    ledger: LedgerClient,
    *,
    has_validation_config: bool,
    keep_v1_logs: bool,
    route_air_session: Callable[[], Callable[[], None]] | None = None,
    resume_from_checkpoint: Any = None,
    in_tune_trial: bool = False,
) -> WorkerSettings:
    env = settings.propagated_env()
    env.update(mode.engine_env)  # what Ray's own functions must see
    return WorkerSettings(
        mode,
        side,
        ledger,
        env,
        has_validation_config,
        keep_v1_logs,
        channel.in_use(),
        route_air_session,
        resume_from_checkpoint,
        in_tune_trial,
    )


def _run(user_fn: Callable[..., Any], settings: WorkerSettings, args: tuple[Any, ...]) -> Any:
    global _session
    import ray

    os.environ.update(settings.env)
    side = settings.side
    rank, size = side.rank_and_size()
    attempt = settings.ledger.worker_started(rank, ray.get_runtime_context().get_actor_id(), side.worker_group(), size)
    address = settings.ledger.open_channel() if settings.use_channel else None
    session = _session = WorkerSession(
        settings, side, rank, size, attempt, sender=channel.connect(address), address=address
    )
    side.start(session)
    usage.take()
    undo_engine = side.install(session.on_report)
    undo_air = settings.route_air_session() if settings.route_air_session is not None else _nothing
    error: BaseException | None = None
    value: Any = None
    try:
        value = user_fn(*args)
        return value
    except BaseException as exc:
        error = exc
        raise
    finally:
        undo_air()
        undo_engine()
        side.finish()
        _session = None
        returned = value if rank == 0 else None
        usages = usage.take()
        sent = session.next_index
        if session.sender is not None:
            session.drain(ARRIVAL_TIMEOUT_S)  # every record it wrote is stored before worker_done
            session.sender.close()
        session.close_answers()
        try:
            # Blocking: every earlier record from this worker is in before fit() returns.
            settings.ledger.worker_done(rank, returned, usages, error, attempt, sent)
        except Exception:
            # An unpicklable return value or exception must not hide the run's outcome.
            plain = RuntimeError(f"{type(error).__name__}: {error}") if error else None
            settings.ledger.worker_done(rank, None, usages, plain, attempt, sent)


def _nothing() -> None:
    pass


class _Entry:
    """The training function Ray runs. A module-level class, so that it is pickled by
    reference and ``_session`` is set in this module, not in a by-value copy of it."""

    def __init__(self, user_fn: Callable[..., Any], settings: WorkerSettings) -> None:
        self.user_fn = user_fn
        self.settings = settings
        self.__name__ = getattr(user_fn, "__name__", "train_fn_per_worker")


class _EntryWithConfig(_Entry):
    def __call__(self, config: Any) -> Any:
        return _run(self.user_fn, self.settings, (config,))


class _EntryWithoutConfig(_Entry):
    def __call__(self) -> Any:
        return _run(self.user_fn, self.settings, ())


def wrap(user_fn: Callable[..., Any], settings: WorkerSettings) -> Callable[..., Any]:
    """Wrap ``user_fn`` so each worker sets up compat, runs it, and reports back."""
    takes_config = len(inspect.signature(user_fn).parameters) >= 1
    entry = _EntryWithConfig if takes_config else _EntryWithoutConfig
    return entry(user_fn, settings)


def now() -> float:
    return time.time()


def ledger_reported_checkpoints(session: Any, validated: bool, timeout_s: float | None) -> list[Any]:
    """``get_all_reported_checkpoints`` answered by the run ledger, from the rounds it
    recorded (with the run's retention), where the engine cannot answer itself."""
    found = session.settings.ledger.reported_checkpoints(
        session.attempt, session.rank, session.next_index, validated, timeout_s
    )
    return [(c, m, s.value) for c, m, s in found]
