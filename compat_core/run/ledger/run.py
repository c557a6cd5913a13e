"""One run's ledger: its parts put together behind the calls workers and the driver make.

Each part has one lock of its own: the records (:class:`RecordStore`), their delivery to
callbacks (:class:`RoundDelivery`), validation (:class:`Validations`), the free-round vote
(:class:`FreeRoundVote`), the failures, and the run's outcome here (return value, usage,
attempts). The Ray actor that hosts it is :mod:`compat_core.run.ledger.host`; everything here is
plain code, tested without a cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from compat_core import messages
from compat_core.errors import WorkerLostError
from compat_core.files.journal import Journal
from compat_core.migration.usage import Usage, UsageLog
from compat_core.releases import standins
from compat_core.run import channel
from compat_core.run.ledger import checkpoints
from compat_core.run.ledger.delivery import RoundDelivery, RoundSink, RowMaker
from compat_core.run.ledger.store import RecordStore
from compat_core.run.ledger.validating import ValidationRunner, Validations
from compat_core.run.ledger.votes import FreeRoundVote
from compat_core.semantics.records import CallbackFailure, DeliveredRound, LedgerSnapshot, Record, WorldSizes
from compat_core.semantics.rounds import CheckpointStatus, Retention

# How long ``worker_done`` waits for a worker's records still on their way.
ARRIVAL_TIMEOUT_S = 30.0
# How long a failure waits for the other ranks' records of rounds the failed rank completed
# (they come unless a rank died too: a rank that finishes or fails ends the wait).
GRACE_S = ARRIVAL_TIMEOUT_S
# The same wait for a failure the engine saw (a process that died without a word): its rank
# never finishes, so the wait ends with the rounds it completed, or after this long.
ENGINE_GRACE_S = 5.0


class Failures:
    """The workers' errors, by attempt."""

    def __init__(self) -> None:
        self._by_attempt: dict[int, dict[int, BaseException]] = {}
        self._lock = threading.Lock()

    def add(self, attempt: int, rank: int, error: BaseException, *, replace: bool = True) -> None:
        with self._lock:
            errors = self._by_attempt.setdefault(attempt, {})
            if replace or rank not in errors:
                errors[rank] = error

    def of_attempt(self, attempt: int) -> dict[int, BaseException]:
        with self._lock:
            return dict(self._by_attempt.get(attempt, {}))

    def by_attempt(self) -> list[dict[int, BaseException]]:
        with self._lock:
            return [dict(self._by_attempt[a]) for a in sorted(self._by_attempt)]

    def last_by_rank(self) -> dict[int, BaseException]:
        """Each rank's latest error."""
        errors: dict[int, BaseException] = {}
        for attempt in self.by_attempt():
            errors.update(attempt)
        return errors


class RunLedger:
    """Collects a run's reports; plays V2's controller for UserCallbacks and, where the
    engine has none, runs asynchronous validations.

    ``round_sink`` (optional) is called with each complete round (a :class:`DeliveredRound`), in
    the order ``after_report`` sees them: the live V1 logs are written from it. ``rows``
    (optional) makes each delivered round's V1 row, once, for the sink and the driver's
    ``consumers`` (Ray Tune callbacks under v2).
    """

    def __init__(
        self,
        world_size: int,
        *,
        callbacks: list[Any] | None = None,
        run_context: Any = None,
        validation_runner: ValidationRunner | None = None,
        round_sink: RoundSink | None = None,
        retention: Retention | None = None,
        first_checkpoint_index: int = 0,
        vote_timeout_s: float | None = None,
        consumers: tuple[str, ...] = (),
        rows: RowMaker | None = None,
        journal_path: str | None = None,
    ) -> None:
        self.world_size = world_size
        # What the ledger is told, written before it counts it (journal.py): a restarted host
        # rebuilds the run from it (reopen()); a host lost for good leaves it to the driver
        # (recover()). Its first event is what this ledger was opened with.
        self._journal = Journal(journal_path) if journal_path else None
        self._log(
            "opened",
            world_size,
            dict(
                callbacks=callbacks,
                run_context=run_context,
                validation_runner=validation_runner,
                round_sink=round_sink,
                retention=retention,
                first_checkpoint_index=first_checkpoint_index,
                vote_timeout_s=vote_timeout_s,
                consumers=consumers,
                rows=rows,
            ),
        )
        # V1's number of the run's first checkpoint (a restored trial's follows its stored ones).
        self._first_checkpoint_index = first_checkpoint_index
        self._retention = retention or Retention()
        # Each attempt's ranks: the run's number, or its worker group's (an elastic run's differ).
        self.sizes = WorldSizes(world_size)
        self._store = RecordStore(self.sizes, self._log)
        self._delivery = RoundDelivery(list(callbacks or []), run_context, round_sink, self._log, consumers, rows)
        self._validations = Validations(self._store, validation_runner)
        self._vote = FreeRoundVote(self.sizes, vote_timeout_s, self._log)
        self._failures = Failures()
        self._listener: channel.Listener | None = None
        # The run's outcome: rank 0's return value, the workers' usage, attempts started.
        self._return_value: Any = None
        self._usage = UsageLog()
        self._starts: dict[int, int] = {}  # rank -> one past the last attempt it started in
        self._actors: dict[str, tuple[int, int]] = {}  # a worker's Ray actor id: (attempt, rank)
        self._groups: dict[str, int] = {}  # a worker group's id (V2's engine): its attempt
        # The records themselves are the journal's (LedgerSnapshot reads them from it); those
        # it could not keep (no journal: a ledger in its caller's process) are kept here.
        self._kept: list[Record] = []
        # Told each time the workers rely on a V1-only behaviour new to the run (keep_usages_with).
        self._usage_sink: Callable[[list[Usage]], None] | None = None
        self._sink_lock = threading.Lock()  # one call at a time, each with every kind known then
        self._lock = threading.Lock()

    def open_channel(self, host: str | None = None) -> channel.Address | None:
        """Listen for records written by the workers (compat_core.run.channel); returns the address
        and key they connect with (each worker asks; the first call opens it), or None when
        this process cannot listen (the workers then make actor calls). ``host`` defaults to
        this node's IP as Ray knows it."""
        with self._lock:
            if self._listener is None:
                host = host or standins.node_ip()
                try:
                    self._listener = channel.Listener(host, self._records_sent, self._vote_sent)
                except OSError as exc:
                    channel.logger.warning("compat's run ledger cannot listen on %s (%s): actor calls", host, exc)
                    return None
                listener = self._listener
                self._vote.push = lambda rank, key, free: listener.push(rank, *key, free)
            return self._listener.address

    # -- called by workers -------------------------------------------------
    def worker_started(
        self, rank: int, actor_id: str | None = None, group: str | None = None, world_size: int | None = None
    ) -> int:
        """A worker of ``rank`` (the Ray actor ``actor_id``) of a group of ``world_size`` starts
        the training function; returns its attempt number. Asked again by the same actor (Ray
        retried the call on a restarted host), the same number.

        An attempt is a worker group: the one named ``group`` (V2's engine, which may start a
        group of another size each time: an elastic run), else -- V1's engine restarts every
        rank -- the number of times this rank started before."""
        with self._lock:
            if actor_id is not None and self._actors.get(actor_id, (0, -1))[1] == rank:
                return self._actors[actor_id][0]
            if group is None:
                attempt = self._starts.get(rank, 0)
            else:
                attempt = self._groups.get(group, max(self._starts.values(), default=0))
            self._log("started", rank, attempt, actor_id, group, world_size)
            self._started(rank, attempt, actor_id, group, world_size)
        if attempt > 0 and group is None:
            # V2's engine reports each failure itself (EngineFailures), and an attempt it ends
            # without one (a resize) ends without after_exception, as raw V2's.
            self._end_unexplained(attempt - 1)
        return attempt

    def _started(self, rank: int, attempt: int, actor_id: str | None, group: str | None, size: int | None) -> None:
        """Note a worker's start (under the lock; replayed from the journal the same way)."""
        self._starts[rank] = max(self._starts.get(rank, 0), attempt + 1)
        if actor_id is not None:
            self._actors[actor_id] = (attempt, rank)
        if group is not None:
            self._groups.setdefault(group, attempt)
        if size is not None:
            self.sizes.set(attempt, size)

    def _end_unexplained(self, attempt: int) -> None:
        """The engine retries: if ``attempt`` ended without a word (no rank failed, some did
        not finish), its unfinished ranks are its failure, delivered before the next attempt's
        rounds. Engines report a failure before they retry; Ray 2.60's Tune sometimes does
        not (a running trial whose actor died before its task's error came, docs §21)."""
        if self._failures.of_attempt(attempt):
            return
        lost = [rank for rank in range(self.sizes.of(attempt)) if not self._store.finished(attempt, rank)]
        if not lost:
            return
        seen = self._store.last_seen(attempt)
        for rank in lost:
            error = WorkerLostError(messages.worker_lost(rank, attempt, seen.get(rank)))
            self._failures.add(attempt, rank, error, replace=False)
        self._attempt_failed(attempt)

    def _attempt_failed(self, attempt: int) -> None:
        """``after_exception`` for ``attempt`` (once), after its rounds, with its failures."""
        if self._delivery.callbacks:
            self._delivery.attempt_failed(attempt, lambda: self._failures.of_attempt(attempt))

    def next_checkpoint_index(self, attempt: int) -> int:
        """The number V1 gives the next checkpoint of ``attempt`` (V1 numbers across restores)."""
        return max(self._first_checkpoint_index, self._store.next_v1_checkpoint_number(attempt))

    def record(self, record: Record, validation: tuple[Any, Any] | None = None) -> None:
        """Store one report; ``validation`` is ``(persisted checkpoint, request)`` when the
        ledger validates. A record already stored (sent again after the channel broke, or
        after the host was restarted) is ignored."""
        self._store_record(record, validation, self._log("record", record, validation))

    def _records_sent(self, batch: list[tuple[tuple[Any, Any], bytes]]) -> None:
        """Records from the channel: each ``((record, validation), sent)``, ``sent`` the bytes its
        worker wrote, journaled as they are, the batch with one write (pickling each record
        again cost the host most of a record's time: docs/performance.md, "Width")."""
        journaled = self._journal is not None and self._journal.append_records([sent for _, sent in batch])
        for (record, validation), _ in batch:
            try:
                self._store_record(record, validation, journaled or self._log("record", record, validation))
            except Exception:  # one bad record must not stop the others
                channel.logger.exception("compat's run ledger could not store a record")

    def _store_record(self, record: Record, validation: tuple[Any, Any] | None, journaled: bool) -> None:
        added, complete = self._store.add(record)
        if not added:
            return
        with self._lock:
            new_kind = self._merge_usages(record.usages)
            if not journaled:
                self._kept.append(record)
        if new_kind:
            self._tell_usages()
        if validation is not None:
            self._validations.request(record.key, *validation)
        if complete is not None:
            self._delivery.round_complete(record.key, complete)

    def usages(self) -> list[Usage]:
        """The V1-only behaviours the workers relied on so far (a run Tune ends before its
        fit() returns leaves them in its readiness record)."""
        with self._lock:
            return self._usage.as_list()

    def keep_usages_with(self, sink: Callable[[list[Usage]], None]) -> None:
        """Call ``sink`` with every V1-only behaviour the workers relied on so far, now and each
        time a report or a worker's end brings one new to the run (in this process: a Tune
        trial's readiness record, which must hold them before Tune ends the trial's process
        at a report). A sink that raises is logged and called again with the next new one."""
        self._log("usage_sink", sink)
        with self._lock:
            self._usage_sink = sink
        self._tell_usages()

    def _merge_usages(self, usages: list[Usage]) -> bool:
        """Count ``usages`` (under the lock); whether a kind is new to the run."""
        known = len(self._usage.entries)
        self._usage.merge(usages)
        return len(self._usage.entries) > known

    def _tell_usages(self) -> None:
        with self._sink_lock:
            with self._lock:
                sink, usages = self._usage_sink, self._usage.as_list()
            if sink is None or not usages:
                return
            try:
                sink(usages)
            except Exception:
                channel.logger.exception("compat's run ledger could not keep the run's V1-only behaviours")

    def stored_through(self, attempt: int, rank: int, wanted: int = 0, timeout_s: float = 0.0) -> int:
        """The first index of ``rank``'s records in ``attempt`` not stored yet: a worker forgets
        the records before it (it keeps what it wrote to the socket until then). With
        ``timeout_s``, the answer waits in the ledger until it reaches ``wanted`` (a worker at
        its end, waiting for its last records to be read) or the time is up."""
        return self._store.stored_through(attempt, rank, wanted, timeout_s)

    def vote_free_round(self, attempt: int, index: int, rank: int, free: bool, wait: bool) -> bool:
        """Each rank says whether its report of round ``(attempt, index)`` carries nothing
        V2 keeps; see :class:`FreeRoundVote`."""
        return self._vote.vote((attempt, index), rank, free, wait)

    async def vote_free_round_async(self, attempt: int, index: int, rank: int, free: bool, wait: bool) -> bool:
        """:meth:`vote_free_round` on the host's event loop: a waiting rank holds no thread."""
        return await self._vote.vote_async((attempt, index), rank, free, wait)

    def _vote_sent(self, attempt: int, index: int, rank: int, free: bool) -> None:
        """A vote from the record channel: the decision is pushed to the rank's answer connection."""
        self._vote.vote_pushed((attempt, index), rank, free)

    def settle_free_round(self, attempt: int, index: int, rank: int) -> bool:
        """A rank that voted on the channel and heard no decision in time: see
        :meth:`FreeRoundVote.settle`."""
        return self._vote.settle((attempt, index), rank)

    def reported_checkpoints(
        self, attempt: int, rank: int, sent: int, validated: bool, timeout_s: float | None
    ) -> list[tuple[Any, dict[str, Any], CheckpointStatus]]:
        """``get_all_reported_checkpoints`` where the engine cannot answer."""
        return checkpoints.reported_checkpoints(self._store, self._retention, attempt, rank, sent, validated, timeout_s)

    def use_validation_config(self, config: Any) -> None:
        self._log("validation_config", config)
        self._validations.use_config(config)

    def store_seed_validation(self, token: str, seed: Any) -> None:
        """Keep ``report(validate_fn=..., validate_config=...)``'s function for the dispatcher."""
        self._log("seed", token, seed)
        self._validations.store_seed(token, seed)

    def seed_validation(self, token: str) -> Any:
        return self._validations.seed(token)

    def worker_done(
        self,
        rank: int,
        return_value: Any,
        usages: list[Usage],
        error: BaseException | None = None,
        attempt: int = 0,
        sent: int = 0,
    ) -> None:
        """A worker finished (or failed) after sending ``sent`` records. Calls run on a
        thread pool, so this waits until those records are in: ``after_exception`` then
        follows every round of the attempt, and ``close()`` misses nothing. Told again (Ray
        retried the call on a restarted host), nothing changes."""
        if self._store.finished(attempt, rank):
            return
        self._log("done", rank, return_value, usages, error, attempt)
        self._store.wait_for_records(attempt, rank, sent, ARRIVAL_TIMEOUT_S)
        self._store.finish(attempt, rank)
        with self._lock:
            if rank == 0:
                self._return_value = return_value
            new_kind = self._merge_usages(usages)
        if new_kind:
            self._tell_usages()
        if error is None:
            return
        self._failures.add(attempt, rank, error)
        # The other ranks' records of the rounds this rank completed may still be on their way
        # (a loaded machine delays them by seconds): wait for them, or for the ranks that did
        # not send them to finish, so after_exception follows those rounds. Those ranks are
        # still running: the engine learns of this failure only when this call returns.
        self._store.wait_for_rounds(attempt, sent, GRACE_S)
        self._attempt_failed(attempt)

    def _current_attempt_locked(self) -> int:
        """The attempt the workers started last (0 before any started); hold ``_lock``."""
        return max(self._starts.values(), default=1) - 1

    # -- called by the engine ----------------------------------------------
    def engine_failed(self, errors: dict[int, BaseException]) -> None:
        """The engine saw the current attempt fail (``{rank: error}``), whatever the workers
        said: a process that exited or was killed, a node that went away. ``after_exception``
        follows, once per attempt, after the rounds the failed ranks completed; a Python
        exception the worker reported itself stays its rank's error."""
        with self._lock:
            attempt = self._current_attempt_locked()
        self._log("failed", attempt, errors)
        for rank, error in errors.items():
            self._failures.add(attempt, rank, error, replace=False)
        sent = max((self._store.count(attempt, rank) for rank in errors), default=0)
        self._store.wait_for_rounds(attempt, sent, ENGINE_GRACE_S)
        self._attempt_failed(attempt)

    def actor_died(self, actor_id: str | None, pickled_error: bytes) -> None:
        """The engine saw a Ray actor of the run die (its process exited or was killed, its
        node went away): a worker's, its rank fails with the error (Ray's ``ActorDiedError``,
        pickled: Ray would take it as a failed input); another actor (the engine's trainer,
        whose workers go with it), every rank of the current attempt still running."""
        import pickle

        error = pickle.loads(pickled_error)
        with self._lock:
            found = self._actors.get(actor_id) if actor_id is not None else None
            attempt = self._current_attempt_locked()
        if found is not None and found[0] == attempt:
            ranks = [found[1]]
        elif found is not None:
            return  # a worker of an attempt already over
        else:
            ranks = [rank for rank in range(self.sizes.of(attempt)) if not self._store.finished(attempt, rank)]
        if ranks:
            self.engine_failed(dict.fromkeys(ranks, error))

    # -- called by the driver ----------------------------------------------
    def delivered_since(
        self, consumer: str, count: int, flush: bool = False, wait_s: float = 0.0
    ) -> list[DeliveredRound]:
        """The complete rounds delivered after the first ``count``, in delivery order: what the
        driver's ``consumer`` (one named in ``consumers`` when the run opened: ``"tune"``,
        ``"tune_callbacks"``) feeds Ray Tune with as the run goes on; the ledger forgets the
        rounds every consumer has read. With none yet, the call waits up to ``wait_s`` for the
        next round to be delivered and returns it at once (the ledger feeds its consumers; they
        do not poll on a timer), or for :meth:`wake_consumers`. ``flush``: the engine is done,
        so every round complete by now is handed over first (the delivery thread may still be
        busy with a slow sink or callback: the last call must not miss those rounds)."""
        if flush:
            self._delivery.flush()
        return self._delivery.delivered.since(consumer, count, wait_s)

    def wake_consumers(self) -> None:
        """Consumers waiting in :meth:`delivered_since` return now (the run's engine ended)."""
        self._delivery.delivered.wake()

    def callback_failed(self, failure: CallbackFailure) -> None:
        """A callback running elsewhere (Ray Tune callbacks on the driver) raised."""
        self._log("callback_failed", failure)
        self._delivery.failures.append(failure)

    def _log(self, *event: Any) -> bool:
        """Journal ``event``: whether the journal kept it."""
        return self._journal is not None and self._journal.append(*event)

    def close(self) -> LedgerSnapshot:
        """Wait for pending validations and hand everything over."""
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        self._validations.close()
        self._delivery.finish()
        self._log("closed")
        if self._journal is not None:
            self._journal.close()  # the driver's snapshot owns it from now on (LedgerSnapshot.keep_journal)
        return self._snapshot()

    def _snapshot(self, host_lost: str | None = None, journal_path: str | None = None) -> LedgerSnapshot:
        with self._lock:
            return LedgerSnapshot(
                world_size=self.world_size,
                validations=self._store.validations(),
                return_value=self._return_value,
                usages=self._usage.as_list(),
                worker_errors=self._failures.last_by_rank(),
                callback_failures=self._delivery.failures.since(0),
                attempts=self._current_attempt_locked() + 1,
                failures=self._failures.by_attempt(),
                host_lost=host_lost,
                journal_path=journal_path or (self._journal.path if self._journal is not None else None),
                unjournaled=list(self._kept),
                world_sizes=self.sizes.as_dict(),
                workers_started=bool(self._starts),
            )
