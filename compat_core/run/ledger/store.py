"""The live store of a run's records: each record once, in arrival order, with what arrived per
worker and which rounds are still missing a rank.

The store's one lock guards everything in it; its condition wakes whoever waits for records
(the failure waits, ``get_all_reported_checkpoints``, a worker that finished).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from compat_core.semantics.records import (
    Arrivals,
    Record,
    RoundKey,
    WorldSizes,
    v1_checkpoint_number,
)
from compat_core.semantics.rounds import ValidationOutcome


class RecordStore:
    """What a run's records tell, each record counted once, in memory that does not grow with
    the run: which records arrived from each worker of each attempt (a watermark per worker),
    the rounds still missing a rank, the complete rounds with a checkpoint, where each rank
    last reported from and V1's checkpoint numbers. The records themselves are the journal's
    (the ledger journals each before storing it): a complete round leaves the store once
    handed on, as the ledger's delivery leaves it once delivered."""

    def __init__(self, world_size: int | WorldSizes, log: Callable[..., object] | None = None) -> None:
        self.sizes = WorldSizes.given(world_size)
        # Every validation outcome is journaled before the store counts it (the ledger
        # journals the records it is handed itself).
        self._log = log
        self._arrived = Arrivals()  # a record is stored once (a resent one is known by its index)
        self._pending: dict[RoundKey, dict[int, Record]] = {}  # rounds still missing a rank
        self._checkpointed: dict[RoundKey, dict[int, Record]] = {}  # complete rounds with a checkpoint
        self._where: dict[tuple[int, int], str] = {}  # (attempt, rank) -> "pid N on HOST"
        self._v1_numbers: dict[int, int] = {}  # attempt -> its highest V1 checkpoint_00000N
        self._finished: dict[int, set[int]] = {}  # attempt -> ranks that called worker_done
        self._validations: dict[RoundKey, ValidationOutcome] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        # Waits on one worker's records (a worker at its end, the ledger at a worker's end): each
        # woken by that worker's records only, not by every record of the run.
        self._worker_waits: dict[tuple[int, int], list[tuple[Callable[[], bool], threading.Event]]] = {}

    def add(self, record: Record) -> tuple[bool, dict[int, Record] | None]:
        """Store ``record``, unless already stored (sent again after the channel broke or the
        ledger's host was restarted): whether it was new, and its round when it completes it."""
        with self._lock:
            if not self._arrived.add(record.attempt, record.rank, record.index):
                return False, None
            worker = (record.attempt, record.rank)
            if record.pid is not None:
                self._where[worker] = (
                    f"pid {record.pid} on {record.hostname}" if record.hostname else f"pid {record.pid}"
                )
            number = v1_checkpoint_number(record.checkpoint_dir_name)
            if number is not None:
                self._v1_numbers[record.attempt] = max(number, self._v1_numbers.get(record.attempt, number))
            for ready, event in self._worker_waits.get(worker, ()):
                if ready():
                    event.set()
            self._changed.notify_all()
            round_ = self._pending.setdefault(record.key, {})
            round_[record.rank] = record
            if len(round_) < self.sizes.of(record.attempt):
                return True, None
            del self._pending[record.key]
            if any(r.has_checkpoint for r in round_.values()):
                self._checkpointed[record.key] = round_
            return True, round_

    def stored_through(self, attempt: int, rank: int, wanted: int = 0, timeout_s: float = 0.0) -> int:
        """The first index of ``rank``'s records in ``attempt`` not stored (every one before
        it is), once it reaches ``wanted`` or ``timeout_s`` passed."""
        if timeout_s > 0:
            self._wait_for_worker((attempt, rank), lambda: self._arrived.through(attempt, rank) >= wanted, timeout_s)
        with self._lock:
            return self._arrived.through(attempt, rank)

    def _wait_for_worker(self, worker: tuple[int, int], ready: Callable[[], bool], timeout: float | None) -> bool:
        """Wait until ``ready()`` (called under the lock), checked each time a record of
        ``worker`` (attempt, rank) is stored; whether it became ready."""
        with self._lock:
            if ready():
                return True
            entry = (ready, threading.Event())
            self._worker_waits.setdefault(worker, []).append(entry)
        try:
            entry[1].wait(timeout)
        finally:
            with self._lock:
                waits = self._worker_waits.get(worker, [])
                if entry in waits:
                    waits.remove(entry)
                if not waits:
                    self._worker_waits.pop(worker, None)
        with self._lock:
            return ready()

    def finish(self, attempt: int, rank: int) -> set[int]:
        """Rank ``rank`` of ``attempt`` ended (returned or failed); the ranks ended so far."""
        with self._lock:
            finished = self._finished.setdefault(attempt, set())
            finished.add(rank)
            self._changed.notify_all()  # a failure waiting for this rank's records stops waiting
            return set(finished)

    def finished(self, attempt: int, rank: int) -> bool:
        with self._lock:
            return rank in self._finished.get(attempt, ())

    def add_validation(self, key: RoundKey, outcome: ValidationOutcome) -> None:
        if self._log is not None:
            self._log("validation", key, outcome)
        with self._lock:
            self._validations[key] = outcome
            self._changed.notify_all()

    def wait(self, ready: Callable[[], bool], timeout: float | None) -> bool:
        """Wait until ``ready()`` (called under the store's lock: use the ``*_locked`` readers)."""
        with self._lock:
            return self._changed.wait_for(ready, timeout=timeout)

    def wait_for_records(self, attempt: int, rank: int, sent: int, timeout: float | None) -> bool:
        """Wait until ``sent`` records of ``rank`` in ``attempt`` are stored."""
        return self._wait_for_worker((attempt, rank), lambda: self.count_locked(attempt, rank) >= sent, timeout)

    def wait_for_rounds(self, attempt: int, sent: int, timeout: float | None) -> bool:
        """Wait until the first ``sent`` rounds of ``attempt`` have every rank's record, or
        every rank of the attempt has ended (a dead rank never sends the rest)."""
        return self.wait(
            lambda: (
                self.rounds_complete_locked(attempt, sent)
                or len(self._finished.get(attempt, ())) >= self.sizes.of(attempt)
            ),
            timeout,
        )

    def rounds_complete_locked(self, attempt: int, sent: int) -> bool:
        return not any(a == attempt and i < sent for a, i in self._pending)

    def last_seen(self, attempt: int) -> dict[int, str]:
        """Where each rank of ``attempt`` last reported from: ``"pid N on HOST"``."""
        with self._lock:
            return {rank: where for (a, rank), where in self._where.items() if a == attempt}

    def next_v1_checkpoint_number(self, attempt: int) -> int:
        """One past the highest ``checkpoint_00000N`` an attempt before ``attempt`` persisted."""
        with self._lock:
            numbers = [n for a, n in self._v1_numbers.items() if a < attempt]
            return max(numbers) + 1 if numbers else 0

    def count(self, attempt: int, rank: int) -> int:
        """Records stored of ``rank`` in ``attempt``."""
        with self._lock:
            return self.count_locked(attempt, rank)

    def count_locked(self, attempt: int, rank: int) -> int:
        return self._arrived.count(attempt, rank)

    def validated_locked(self, keys: list[RoundKey]) -> bool:
        return all(key in self._validations for key in keys)

    def checkpoint_rounds(self) -> dict[RoundKey, dict[int, Record]]:
        """The complete rounds in which some rank attached a checkpoint, by key."""
        with self._lock:
            return dict(self._checkpointed)

    def validations(self) -> dict[RoundKey, ValidationOutcome]:
        with self._lock:
            return dict(self._validations)
