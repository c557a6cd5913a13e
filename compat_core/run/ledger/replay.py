"""A run ledger rebuilt from its journal: in a restarted host, as the lost host held it
(:func:`reopen`), and in the driver for a host lost for good (:func:`recover`). The journal's
events are applied to a new :class:`RunLedger` by :class:`Replay`, which sets the ledger's parts
as the live ledger's own calls would have (it reads the ledger's private parts: the two are one
design, kept apart so the live ledger reads without its rebuilding)."""

from __future__ import annotations

import itertools
from typing import Any

from compat_core import messages
from compat_core.files import journal
from compat_core.files.journal import Journal
from compat_core.run.ledger.run import RunLedger
from compat_core.run.ledger.votes import FreeRoundVote
from compat_core.semantics.records import LedgerSnapshot, Record


def reopen(journal_path: str) -> RunLedger:
    """The run whose journal is at ``journal_path``, rebuilt in a restarted host as its lost
    host held it: every record, validation outcome, vote decision, worker's start and end,
    failure and handed-over round. What was in flight goes on here: complete rounds not yet
    handed over are (again: a round whose callbacks were running when the host died is
    delivered twice), validations without an outcome are run. Callbacks and the round sink
    are the ones the run was opened with, unpickled afresh: what they kept in the lost
    process's memory is gone (docs/architecture.md)."""
    journal.cut_to_whole_frames(journal_path)
    events = journal.read(journal_path)
    first = next(events, None)
    if first is None or first[0] != "opened":
        raise ValueError(messages.not_a_journal(journal_path, first))
    ledger = RunLedger(first[1], **first[2])  # no journal while the journal is replayed
    replay = Replay(ledger)
    for event in events:
        replay.apply(event)
    ledger._journal = Journal(journal_path)
    replay.resume()
    return ledger


class Replay:
    """A journal's events applied to a new :class:`RunLedger`, without journaling them again
    or calling anyone; :meth:`resume` then goes on with what the lost host had in flight."""

    def __init__(self, ledger: RunLedger) -> None:
        self.ledger = ledger
        self.complete: dict[tuple[int, int], dict[int, Record]] = {}  # complete, not handed over
        self.after_exception: set[int] = set()
        self.decided: dict[tuple[int, int], bool] = {}
        self.validate: dict[tuple[int, int], tuple[Any, Any]] = {}

    def apply(self, event: tuple[Any, ...]) -> None:
        ledger, kind, args = self.ledger, event[0], event[1:]
        if kind == "record":
            record, validation = args[0], args[1] if len(args) > 1 else None
            added, complete = ledger._store.add(record)
            if added:
                ledger._usage.merge(record.usages)
                if validation is not None:
                    self.validate[record.key] = validation
            if complete is None:
                pass
            elif ledger._delivery.feeds_anyone():
                self.complete[record.key] = complete  # handed over if the journal does not say it was
            else:
                ledger._delivery.round_complete(record.key, complete)  # to no one: counted, forgotten
        elif kind == "validation":
            ledger._store.add_validation(*args)
            self.validate.pop(args[0], None)
        elif kind == "started":
            rank, attempt, actor_id, group, size = (*args, None, None, None)[:5]  # older journals: fewer
            ledger._started(rank, attempt, actor_id, group, size)
        elif kind == "done":
            rank, value, usages, error, attempt = args
            ledger._store.finish(attempt, rank)
            ledger._usage.merge(usages)
            ledger._return_value = value if rank == 0 else ledger._return_value
            if error is not None:
                ledger._failures.add(attempt, rank, error)
        elif kind == "failed":
            for rank, error in args[1].items():
                ledger._failures.add(args[0], rank, error, replace=False)
        elif kind == "callback_failed":
            ledger._delivery.failures.append(args[0])
        elif kind == "delivered":
            round_ = self.complete.pop(args[0], None)
            if round_ is not None:
                ledger._delivery.replayed(args[0], round_)
        elif kind == "consumed":
            ledger._delivery.delivered.consumed(*args)
        elif kind == "after_exception":
            self.after_exception.add(args[0])
        elif kind == "vote":
            self.decided[args[0]] = args[1]
            if len(self.decided) > 64:  # only each attempt's last rounds are restored
                self.decided = FreeRoundVote.recent(self.decided)
        elif kind == "validation_config":
            ledger._validations.use_config(args[0])
        elif kind == "seed":
            ledger._validations.store_seed(*args)
        elif kind == "usage_sink":
            ledger._usage_sink = args[0]

    def _hand_over_complete(self) -> None:
        """What the lost host had handed over restored, the complete rounds it had not go on."""
        delivery = self.ledger._delivery
        delivery.restore(self.after_exception)
        for key in sorted(self.complete):
            delivery.round_complete(key, self.complete[key])

    def hand_to_sink(self) -> None:
        """The driver's end of a run whose host is lost for good: the complete rounds not handed
        over go to the round sink (the ledger has no callbacks), which then finishes."""
        self._hand_over_complete()
        self.ledger._delivery.finish()

    def resume(self) -> None:
        ledger = self.ledger
        ledger._vote.restore(self.decided)
        self._hand_over_complete()
        done = ledger._store.validations()
        for key, (checkpoint, request) in sorted(self.validate.items()):
            if key not in done:
                ledger._validations.request(key, checkpoint, request)


def recover(journal_path: str, world_size: int, lost: str) -> LedgerSnapshot:
    """The snapshot of a run whose ledger's host died for good (``lost`` says how), rebuilt
    from its journal as a restarted host rebuilds it (:class:`Replay`): every record,
    validation outcome, worker's end and failure the ledger was told before it died. The
    rounds it completed and did not hand to the run's round sink (V1's logs) are handed to it
    here, as a restarted host would; no callback runs again: they ran in the lost process
    (and may be what killed it)."""
    events = journal.read(journal_path)
    first = next(events, None)
    opened = first[2] if first is not None and first[0] == "opened" else {}
    sink = opened.get("round_sink")
    ledger = RunLedger(world_size, round_sink=sink, rows=opened.get("rows") if sink is not None else None)
    replay = Replay(ledger)
    for event in itertools.chain([first] if first is not None else [], events):
        replay.apply(event)
    if sink is not None:
        replay.hand_to_sink()
    return ledger._snapshot(host_lost=lost, journal_path=journal_path)
