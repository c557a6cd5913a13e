"""The v2 free-round vote: a round in which no rank passes a checkpoint (or asks for a
validation) carries nothing V2 keeps, so compat delivers it itself instead of through V2's
controller; every rank must say so first (V2's report is a barrier).

The vote decides **once per round**, and every rank is given that one decision, whatever order
the ranks arrive in and however late: either every rank goes through Ray's report for the
round, or none does. (A rank that took each answer for itself could skip Ray's barrier that an
earlier rank, tired of waiting, had already entered, and the ranks' reports would pair up
wrongly from then on.) The round is decided

- *not free* as soon as any rank says its report is not free;
- *free* when every rank has said its report is free;
- *not free* when a rank has waited :data:`VOTE_TIMEOUT_S` for the others (a rank slower than
  that, or dead): the ranks still to vote are told so when they come.

A round's state is dropped once every rank has its answer, so the vote's memory does not grow
with a run's length. Each decision is journaled before any rank is given it: a restarted host
gives a rank that asks again (Ray retries the call) the decision the others already acted on.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from compat_core.run.ledger.records import RoundKey

# How long a rank waits for the others to say whether a round carries a checkpoint.
VOTE_TIMEOUT_ENV_VAR = "COMPAT_VOTE_TIMEOUT_S"
VOTE_TIMEOUT_S = 60.0


def vote_timeout_s() -> float:
    """The vote's timeout: ``COMPAT_VOTE_TIMEOUT_S`` (read on the driver when a run starts),
    else :data:`VOTE_TIMEOUT_S`."""
    text = os.environ.get(VOTE_TIMEOUT_ENV_VAR)
    if text is None:
        return VOTE_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{VOTE_TIMEOUT_ENV_VAR}={text!r}: give a number of seconds > 0 (default {VOTE_TIMEOUT_S:g}).")
    return value


class FreeRoundVote:
    def __init__(
        self, world_size: int, timeout_s: float | None = None, log: Callable[..., object] | None = None
    ) -> None:
        self.world_size = world_size
        self._log = log
        self.timeout_s = VOTE_TIMEOUT_S if timeout_s is None else timeout_s
        self._votes: dict[RoundKey, dict[int, bool]] = {}
        self._decided: dict[RoundKey, bool] = {}
        self._answered: dict[RoundKey, set[int]] = {}
        self._voted = threading.Condition()

    def vote(self, key: RoundKey, rank: int, free: bool, wait: bool) -> bool:
        """Rank ``rank`` says whether its report of round ``key`` is free; returns the round's
        decision: ``True`` when the whole round is free (the rank delivers it without Ray),
        ``False`` when it goes through Ray's report. A rank whose report is not free (``wait``
        false) learns nothing it needs: it goes through Ray whatever the others said."""
        with self._voted:
            votes = self._votes.setdefault(key, {})
            votes[rank] = free
            if key not in self._decided:
                if not free:
                    self._decide(key, False)
                elif len(votes) >= self.world_size and all(votes.values()):
                    self._decide(key, True)
            self._voted.notify_all()
            if wait and key not in self._decided:
                self._voted.wait_for(lambda: key in self._decided, timeout=self.timeout_s)
                if key not in self._decided:
                    self._decide(key, False)  # waited long enough: the round goes through Ray
            decision = self._decided.get(key, False)
            self._answer(key, rank)
            return decision

    def _decide(self, key: RoundKey, free: bool) -> None:
        if self._log is not None:
            self._log("vote", key, free)
        self._decided[key] = free

    def restore(self, decided: dict[RoundKey, bool]) -> None:
        """A lost host's decisions (from its journal); only :meth:`recent` ones are kept."""
        with self._voted:
            self._decided.update(self.recent(decided))

    @staticmethod
    def recent(decided: dict[RoundKey, bool]) -> dict[RoundKey, bool]:
        """Each attempt's last three rounds' decisions: the ranks are never further apart (a
        free round waits for every rank's vote, any other round for Ray's report, a barrier),
        so no rank can still ask about an earlier one."""
        last: dict[int, int] = {}
        for attempt, index in decided:
            last[attempt] = max(index, last.get(attempt, index))
        return {key: free for key, free in decided.items() if key[1] >= last[key[0]] - 2}

    def _answer(self, key: RoundKey, rank: int) -> None:
        """Every rank has its answer: the round's state leaves memory."""
        answered = self._answered.setdefault(key, set())
        answered.add(rank)
        if len(answered) >= self.world_size:
            for table in (self._votes, self._decided, self._answered):
                table.pop(key, None)

    def pending(self) -> int:
        """Rounds whose state is still held (some rank has not voted yet)."""
        with self._voted:
            return len(self._votes)
