"""The records a run's workers send, as every reader of a run sees them: one worker's report
(:class:`Record`), a complete round as the ledger hands it on (:class:`DeliveredRound`), what the
driver receives after ``fit()`` (:class:`LedgerSnapshot`) and what it reads of every record in one
pass (:func:`digest`), and the journal's records read back. Plain values, below the run that
produces them (:mod:`compat_core.run.ledger.store` keeps them while it goes on).
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from compat_core import messages
from compat_core.files import journal
from compat_core.files.storage import V1_CHECKPOINT
from compat_core.migration.usage import Usage
from compat_core.semantics.rounds import ReportRound, ValidationOutcome, WorkerReport, non_finite_keys

# A round is identified by (attempt, index): a retried attempt starts again at index 0.
RoundKey = tuple[int, int]


class WorldSizes:
    """How many ranks each attempt of a run has: the run's own number (``default``) unless the
    attempt's workers said otherwise when they started. An elastic run's attempts differ: V2's
    engine starts each worker group at the size the cluster allows, between the run's minimum
    and maximum (``ScalingConfig(num_workers=(min, max))``)."""

    def __init__(self, default: int, sizes: dict[int, int] | None = None) -> None:
        self.default = default
        self._sizes = dict(sizes or {})

    @classmethod
    def given(cls, sizes: int | WorldSizes) -> WorldSizes:
        return sizes if isinstance(sizes, WorldSizes) else cls(sizes)

    def of(self, attempt: int) -> int:
        return self._sizes.get(attempt, self.default)

    def set(self, attempt: int, size: int) -> None:
        self._sizes[attempt] = size  # one dict assignment: safe to read from any thread

    def as_dict(self) -> dict[int, int]:
        """The attempts whose size is not the default's."""
        return {attempt: size for attempt, size in dict(self._sizes).items() if size != self.default}


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


@dataclass(frozen=True)
class DeliveredRound:
    """A complete round as the ledger hands it on, in delivery order, to the round sink and the
    driver's consumers: every rank's record and, when the run makes them, rank 0's V1 row (V1's
    auto-filled keys), made once, by the ledger, for all of them."""

    key: RoundKey
    records: dict[int, Record]
    row: dict[str, Any] | None = None

    @property
    def rank0(self) -> Record:
        return self.records[min(self.records)]

    @property
    def checkpoint(self) -> Any:
        """The round's checkpoint: the first rank's (in rank order) that passed one."""
        ranked = (self.records[rank] for rank in sorted(self.records))
        return next((r.checkpoint for r in ranked if r.checkpoint is not None), None)


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
    """What the driver receives after ``fit()``. The records are not in it: they are read from
    the run's journal (``journal_path``, on the driver's node) by whoever reads them
    (:meth:`iter_records`, :meth:`rounds`, :attr:`digest`), one at a time, so they never travel
    whole through Ray, nor stay in the ledger's host or in the driver. ``unjournaled``: those the
    journal could not keep (none when it could; every record of a ledger without a journal, in
    its caller's process). Once the driver has it, the snapshot owns the journal
    (:meth:`keep_journal`): it goes with the snapshot."""

    world_size: int  # the run's; an attempt of another size is in ``world_sizes``
    validations: dict[RoundKey, ValidationOutcome]
    return_value: Any
    usages: list[Usage]
    worker_errors: dict[int, BaseException]
    callback_failures: list[CallbackFailure]
    attempts: int = 1
    failures: list[dict[int, BaseException]] = field(default_factory=list)
    # Set when the ledger's host process died and this was recovered from its journal: how.
    host_lost: str | None = None
    journal_path: str | None = None
    unjournaled: list[Record] = field(default_factory=list, repr=False)
    # The attempts whose worker group had another size than ``world_size`` (an elastic run's).
    world_sizes: dict[int, int] = field(default_factory=dict)
    # Whether any worker started the training function (none: the engine refused the run).
    workers_started: bool = True
    # The validation outcomes of the run's earlier fits (a restored run's, a V2 run fitted again
    # under its name), each as its checkpoint's round: set by the driver from the run's storage.
    earlier_validations: list[ReportRound] = field(default_factory=list, repr=False)
    _digest: RecordDigest | None = field(default=None, repr=False)

    @property
    def sizes(self) -> WorldSizes:
        """Each attempt's number of ranks."""
        return WorldSizes(self.world_size, self.world_sizes)

    def iter_records(self) -> Iterator[Record]:
        """Every record of the run, once each: the journal's in the order it kept them, then
        those it could not keep."""
        if self.journal_path is not None:
            yield from journaled_records(self.journal_path)
        yield from self.unjournaled

    @property
    def records(self) -> list[Record]:
        """Every record of the run, as a list (read from the journal at each call: the driver's
        own paths read them one at a time, :meth:`iter_records`)."""
        return list(self.iter_records())

    @property
    def digest(self) -> RecordDigest:
        """What the driver reads of every record, made in one pass (then kept: its size is the
        run's checkpoints and metric names, not its reports)."""
        if self._digest is None:
            self._digest = digest(self.iter_records(), self.sizes, self.validations)
        return self._digest

    @property
    def validated_rounds(self) -> list[ReportRound]:
        """The rounds whose validation outcomes a result merges into its checkpoints' metrics:
        the run's earlier fits', then this fit's checkpoint rounds (matched by checkpoint
        directory name: a checkpoint validated by both has this fit's outcome)."""
        return self.earlier_validations + self.digest.checkpoint_rounds

    def rounds(self) -> list[ReportRound]:
        """Complete rounds of every attempt, in order; within an attempt, a round missing a
        rank (cut off by a failure) ends that attempt's rounds."""
        by_key = group_rounds(self.iter_records())
        sizes = self.sizes
        rounds = []
        cut: set[int] = set()
        for key in sorted(by_key):
            attempt, index = key
            ranks = by_key[key]
            if attempt in cut:
                continue
            if len(ranks) < sizes.of(attempt):
                cut.add(attempt)
                continue
            rounds.append(to_round(key, ranks, self.validations.get(key)))
        return rounds

    def keep_journal(self) -> None:
        """The driver has the snapshot: its journal becomes the snapshot's, renamed out of the
        ledger's way (no host reopens it, no restored run stores its reports again) and
        removed when the snapshot goes (or its process ends; ``journal.prune`` removes one
        whose process died first)."""
        if self.journal_path is None:
            return
        kept = journal.result_path(self.journal_path, os.getpid())
        os.replace(self.journal_path, kept)
        self.journal_path = kept
        weakref.finalize(self, journal.remove, kept)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its records, not its journal's path (the journal stays on this node, and
        goes with this snapshot)."""
        state = dict(self.__dict__)
        if journal.is_result(self.journal_path):
            state["unjournaled"], state["journal_path"] = self.records, None
        return state


@dataclass(frozen=True)
class RecordDigest:
    """What the driver reads of every record of a run, made in one pass over them, in memory
    that grows with the run's checkpoints and metric names, never with its reports."""

    # The complete rounds with a checkpoint (of the rounds :meth:`LedgerSnapshot.rounds`
    # gives), in order, with their validation outcomes.
    checkpoint_rounds: list[ReportRound]
    # The keys of rank 0's metrics in those rounds.
    rank0_keys: frozenset[str]
    # Each metric that was NaN or infinite in any report: how often, and the first report (in
    # report order: attempt, index, rank) where.
    non_finite: dict[str, tuple[int, tuple[int, int, int]]]
    # The checkpoint of the first record (as journaled) that carried one.
    first_checkpoint: Any
    # Every complete round (as the ledger delivers them: a round after a gap too), how many,
    # and rank 0's record of the last.
    complete_rounds: int = 0
    last_rank0: Record | None = None


def digest(
    records: Iterable[Record], world_size: int | WorldSizes, validations: dict[RoundKey, ValidationOutcome]
) -> RecordDigest:
    """:class:`RecordDigest` of ``records`` (each once). A round is held only until its last
    rank's record arrives; which complete rounds count (a round missing a rank ends its
    attempt's rounds) is known at the end, from each worker's watermark."""
    sizes = WorldSizes.given(world_size)
    arrivals = Arrivals()
    checkpointed: dict[RoundKey, dict[int, Record]] = {}
    key_sets: dict[tuple[int, tuple[str, ...]], int] = {}  # (attempt, rank 0's keys) -> first round
    non_finite: dict[str, tuple[int, tuple[int, int, int]]] = {}
    first_checkpoint = None
    complete = 0
    last: tuple[RoundKey, Record] | None = None

    def read(record: Record) -> None:
        nonlocal first_checkpoint
        arrivals.add(record.attempt, record.rank, record.index)
        if first_checkpoint is None and record.checkpoint is not None:
            first_checkpoint = record.checkpoint
        at = (record.attempt, record.index, record.rank)
        for key in non_finite_keys(record.metrics):
            count, first = non_finite.get(key, (0, at))
            non_finite[key] = (count + 1, min(first, at))

    for (attempt, index), round_ in completed_rounds(records, sizes, read):
        complete += 1
        if last is None or (attempt, index) > last[0]:
            last = ((attempt, index), round_[0])
        seen = (attempt, tuple(round_[0].metrics))
        key_sets[seen] = min(index, key_sets.get(seen, index))
        if any(r.has_checkpoint for r in round_.values()):
            checkpointed[(attempt, index)] = round_
    cuts = {attempt: arrivals.first_incomplete(attempt, sizes.of(attempt)) for attempt in arrivals.attempts()}

    def counted(attempt: int, index: int) -> bool:
        cut = cuts.get(attempt)
        return cut is None or index < cut

    return RecordDigest(
        checkpoint_rounds=[
            to_round(key, checkpointed[key], validations.get(key)) for key in sorted(checkpointed) if counted(*key)
        ],
        rank0_keys=frozenset(k for (attempt, keys), index in key_sets.items() if counted(attempt, index) for k in keys),
        non_finite=non_finite,
        first_checkpoint=first_checkpoint,
        complete_rounds=complete,
        last_rank0=last[1] if last is not None else None,
    )


def completed_rounds(
    records: Iterable[Record], world_size: int | WorldSizes, each: Callable[[Record], None] | None = None
) -> Iterator[tuple[RoundKey, dict[int, Record]]]:
    """Each round of ``records`` (each once) that every rank of its attempt completes, as its
    last rank's record comes (``each`` sees every record first): a round is held only until then."""
    sizes = WorldSizes.given(world_size)
    pending: dict[RoundKey, dict[int, Record]] = {}
    for record in records:
        if each is not None:
            each(record)
        round_ = pending.setdefault(record.key, {})
        round_[record.rank] = record
        if len(round_) == sizes.of(record.attempt):
            yield record.key, pending.pop(record.key)


def journaled_records(journal_path: str) -> Iterator[Record]:
    """Every worker's report a run's journal holds, once each (a record resent after a broken
    channel or a lost host is journaled again), in the order they were journaled."""
    arrived = Arrivals()
    for _, record, *_ in journal.read(journal_path, kinds=("record",)):
        if arrived.add(record.attempt, record.rank, record.index):
            yield record


def journaled_validations(journal_path: str) -> list[ReportRound]:
    """The outcomes of the validations a run's journal holds, each as the round of its
    checkpoint (by directory name: what a stored run's validations are matched by), in the order
    they were journaled (a checkpoint validated again: its newest outcome)."""
    outcomes: dict[RoundKey, ValidationOutcome] = {}
    for _, key, outcome in journal.read(journal_path, kinds=("validation",)):
        outcomes.pop(key, None)  # validated again: in its newest place
        outcomes[key] = outcome
    if not outcomes:
        return []
    by_key = group_rounds(r for r in journaled_records(journal_path) if r.key in outcomes)
    rounds = []
    for key, outcome in outcomes.items():
        name = round_dir_name(by_key.get(key, {}))
        if name is not None:
            rounds.append(ReportRound(index=-1, reports=(), checkpoint_dir_name=name, validation=outcome))
    return rounds


def v1_checkpoint_number(dir_name: str | None) -> int | None:
    """N of V1's ``checkpoint_00000N`` (None for any other name)."""
    match = V1_CHECKPOINT.fullmatch(dir_name) if dir_name else None
    return int(match.group(1)) if match else None


def group_rounds(records: Iterable[Record]) -> dict[RoundKey, dict[int, Record]]:
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


def to_round(key: RoundKey, ranks: dict[int, Record], validation: Any = None) -> ReportRound:
    """A complete round (every rank of its attempt) as the semantics read it."""
    reports = tuple(
        WorkerReport(r.rank, r.metrics, r.has_checkpoint, r.wants_validation) for r in (ranks[i] for i in sorted(ranks))
    )
    return ReportRound(key[1], reports, round_dir_name(ranks), validation, attempt=key[0])


class Arrivals:
    """Which records of each worker arrived, in memory that does not grow with the run: per
    ``(attempt, rank)``, the first index not arrived and the indices arrived after it."""

    def __init__(self) -> None:
        self._through: dict[tuple[int, int], int] = {}
        self._after: dict[tuple[int, int], set[int]] = {}

    def add(self, attempt: int, rank: int, index: int) -> bool:
        """Note the record ``index`` of ``rank`` in ``attempt``: whether it is new."""
        worker = (attempt, rank)
        through = self._through.get(worker, 0)
        after = self._after.get(worker)
        if index < through or (after is not None and index in after):
            return False
        if index != through:
            self._after.setdefault(worker, set()).add(index)
            return True
        through += 1
        while after and through in after:
            after.discard(through)
            through += 1
        self._through[worker] = through
        return True

    def through(self, attempt: int, rank: int) -> int:
        """The first index of ``rank``'s records in ``attempt`` not arrived (all before it did)."""
        return self._through.get((attempt, rank), 0)

    def count(self, attempt: int, rank: int) -> int:
        """Records of ``rank`` in ``attempt`` arrived."""
        return self.through(attempt, rank) + len(self._after.get((attempt, rank), ()))

    def attempts(self) -> set[int]:
        return {attempt for attempt, _ in self._through} | {attempt for attempt, _ in self._after}

    def first_incomplete(self, attempt: int, world_size: int) -> int | None:
        """The first index of ``attempt`` some rank's record arrived for and another's did not
        (None: every index any rank sent, every rank sent)."""
        workers = [(self.through(attempt, rank), self._after.get((attempt, rank), set())) for rank in range(world_size)]
        throughs = [through for through, _ in workers]
        for index in sorted(set(range(min(throughs), max(throughs))).union(*(after for _, after in workers))):
            has = [index < through or index in after for through, after in workers]
            if any(has) and not all(has):
                return index
        return None
