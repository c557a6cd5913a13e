"""The v2 free-round vote: a round in which no rank passes a checkpoint (or asks for a
validation) carries nothing V2 keeps, so compat delivers it itself instead of through V2's
controller; every rank must say so first (V2's report is a barrier)."""

from __future__ import annotations

import threading

from compat_core.ledger.records import RoundKey

# How long a rank waits for the others to say whether a round carries a checkpoint.
VOTE_TIMEOUT_S = 60.0


class FreeRoundVote:
    def __init__(self, world_size: int) -> None:
        self.world_size = world_size
        self._votes: dict[RoundKey, dict[int, bool]] = {}
        self._voted = threading.Condition()

    def vote(self, key: RoundKey, rank: int, free: bool, wait: bool) -> bool:
        """Rank ``rank`` says whether its report of round ``key`` is free. With ``wait``,
        blocks until every rank has voted and returns whether the whole round is free; any
        other answer (or a rank that never votes) sends the round through Ray."""
        with self._voted:
            self._votes.setdefault(key, {})[rank] = free
            self._voted.notify_all()
            if not wait:
                return False
            done = self._voted.wait_for(lambda: len(self._votes[key]) >= self.world_size, timeout=VOTE_TIMEOUT_S)
            return bool(done and all(self._votes[key].values()))
