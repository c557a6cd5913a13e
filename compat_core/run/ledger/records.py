"""The records a run's workers send, and the store that keeps them: each record once, in
arrival order, with what arrived per worker and which rounds are still missing a rank.

The store's one lock guards everything in it; its condition wakes whoever waits for records
(the failure waits, ``get_all_reported_checkpoints``, a worker that finished).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compat_core import messages
from compat_core.semantics.rounds import ReportRound, ValidationOutcome, WorkerReport
from compat_core.usage import Usage

# A round is identified by (attempt, index): a retried attempt starts again at index 0.
RoundKey = tuple[int, int]


@dataclass
class Record:
    """One worker's report as the ledger stores it, whatever called ``report``.

    ``source`` says which door the report came through (``"compat"`` for compat's own
    functions, ``"ray"`` for ``ray.train.report`` and the library callbacks calling it);
    ``usages`` are the V1-only behaviours the worker relied on since its previous report,
    so they survive a worker that crashes later.
    """

    rank: int
    index: int
    metrics: dict[str, Any]
    has_checkpoint: bool
    wants_validation: bool
    timestamp: float
    checkpoint: Any = None
    checkpoint_dir_name: str | None = None
    attempt: int = 0
    source: str = "compat"
    usages: list[Usage] = field(default_factory=list)
    pid: int | None = None
    hostname: str | None = None

    @property
    def key(self) -> RoundKey:
        return (self.attempt, self.index)


@dataclass
class CallbackFailure:
    callback: str
    hook: str
    round_index: int | None
    error: str
    traceback: str

    def message(self) -> str:
        return messages.callback_failed(self.callback, self.hook, self.round_index, self.error)


@dataclass
class LedgerSnapshot:
    """What the driver receives after ``fit()``."""

    world_size: int
    records: list[Record]
    validations: dict[RoundKey, ValidationOutcome]
    return_value: Any
    usages: list[Usage]
    worker_errors: dict[int, BaseException]
    callback_failures: list[CallbackFailure]
    attempts: int = 1
    failures: list[dict[int, BaseException]] = field(default_factory=list)
    # Set when the ledger's host process died and this was recovered from its journal: how.
    host_lost: str | None = None

    def rounds(self) -> list[ReportRound]:
        """Complete rounds of every attempt, in order; within an attempt, a round missing a
        rank (cut off by a failure) ends that attempt's rounds."""
        by_key = group_rounds(self.records)
        rounds = []
        cut: set[int] = set()
        for key in sorted(by_key):
            attempt, index = key
            ranks = by_key[key]
            if attempt in cut:
                continue
            if len(ranks) < self.world_size:
                cut.add(attempt)
                continue
            rounds.append(to_round(key, ranks, self.world_size, self.validations.get(key)))
        return rounds


def group_rounds(records: list[Record]) -> dict[RoundKey, dict[int, Record]]:
    by_key: dict[RoundKey, dict[int, Record]] = {}
    for record in records:
        by_key.setdefault(record.key, {})[record.rank] = record
    return by_key


def round_dir_name(ranks: dict[int, Record]) -> str | None:
    """The directory a round's checkpoint went to: rank 0's name wins, as Ray syncs it."""
    if not any(r.has_checkpoint for r in ranks.values()):
        return None
    ordered = [ranks[k] for k in sorted(ranks)]
    return next((r.checkpoint_dir_name for r in ordered if r.checkpoint_dir_name), None)


def to_round(key: RoundKey, ranks: dict[int, Record], world_size: int, validation: Any = None) -> ReportRound:
    reports = tuple(
        WorkerReport(r.rank, r.metrics, r.has_checkpoint, r.wants_validation)
        for r in (ranks[i] for i in range(world_size))
    )
    return ReportRound(key[1], reports, round_dir_name(ranks), validation, attempt=key[0])


class RecordStore:
    """Every record of a run, once, and what arrived from each worker of each attempt."""

    def __init__(self, world_size: int, log: Callable[..., None] | None = None) -> None:
        self.world_size = world_size
        # Every validation outcome is journaled before the store counts it (the ledger
        # journals the records it is handed itself).
        self._log = log
        self._records: list[Record] = []
        self._seen: set[tuple[int, int, int]] = set()  # (attempt, rank, index) of each record
        self._counts: dict[tuple[int, int], int] = {}  # (attempt, rank) -> records stored
        # (attempt, rank) -> the first index not stored, and the indices stored after it
        self._through: dict[tuple[int, int], int] = {}
        self._after: dict[tuple[int, int], set[int]] = {}
        self._pending: dict[RoundKey, dict[int, Record]] = {}  # rounds still missing a rank
        self._finished: dict[int, set[int]] = {}  # attempt -> ranks that called worker_done
        self._validations: dict[RoundKey, ValidationOutcome] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    def add(self, record: Record) -> tuple[bool, dict[int, Record] | None]:
        """Store ``record``, unless already stored (sent again after the channel broke or the
        ledger's host was restarted): whether it was new, and its round when it completes it."""
        with self._lock:
            seen = (record.attempt, record.rank, record.index)
            if seen in self._seen:
                return False, None
            self._seen.add(seen)
            self._records.append(record)
            worker = (record.attempt, record.rank)
            self._counts[worker] = self._counts.get(worker, 0) + 1
            self._advance_locked(worker, record.index)
            self._changed.notify_all()
            round_ = self._pending.setdefault(record.key, {})
            round_[record.rank] = record
            if len(round_) < self.world_size:
                return True, None
            del self._pending[record.key]
            return True, round_

    def _advance_locked(self, worker: tuple[int, int], index: int) -> None:
        through = self._through.get(worker, 0)
        if index != through:
            self._after.setdefault(worker, set()).add(index)
            return
        after = self._after.get(worker, set())
        through += 1
        while through in after:
            after.discard(through)
            through += 1
        self._through[worker] = through

    def stored_through(self, attempt: int, rank: int) -> int:
        """The first index of ``rank``'s records in ``attempt`` not stored (every one before
        it is)."""
        with self._lock:
            return self._through.get((attempt, rank), 0)

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
        return self.wait(lambda: self._counts.get((attempt, rank), 0) >= sent, timeout)

    def wait_for_rounds(self, attempt: int, sent: int, timeout: float | None) -> bool:
        """Wait until the first ``sent`` rounds of ``attempt`` have every rank's record, or
        every rank of the attempt has ended (a dead rank never sends the rest)."""
        return self.wait(
            lambda: (
                self.rounds_complete_locked(attempt, sent) or len(self._finished.get(attempt, ())) >= self.world_size
            ),
            timeout,
        )

    def rounds_complete_locked(self, attempt: int, sent: int) -> bool:
        return not any((attempt, i) in self._pending for i in range(sent))

    def last_seen(self, attempt: int) -> dict[int, str]:
        """Where each rank of ``attempt`` last reported from: ``"pid N on HOST"``."""
        with self._lock:
            seen = {}
            for r in self._records:
                if r.attempt == attempt and r.pid is not None:
                    seen[r.rank] = f"pid {r.pid} on {r.hostname}" if r.hostname else f"pid {r.pid}"
            return seen

    def count(self, attempt: int, rank: int) -> int:
        """Records stored of ``rank`` in ``attempt``."""
        with self._lock:
            return self.count_locked(attempt, rank)

    def count_locked(self, attempt: int, rank: int) -> int:
        return self._counts.get((attempt, rank), 0)

    def validated_locked(self, keys: list[RoundKey]) -> bool:
        return all(key in self._validations for key in keys)

    def records(self) -> list[Record]:
        with self._lock:
            return list(self._records)

    def validations(self) -> dict[RoundKey, ValidationOutcome]:
        with self._lock:
            return dict(self._validations)
