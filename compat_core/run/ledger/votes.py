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

A rank learns the decision in one of two ways. On the record channel (compat_core.run.channel)
its vote is a message and the decision is **pushed** to it, on a connection of its own, when the
round is decided (:meth:`FreeRoundVote.vote_pushed`): a waiting rank holds nothing in the host
but its place in a set. A rank without the channel (or whose channel broke: the host died) asks
by an actor call that waits for the decision (:meth:`FreeRoundVote.vote`,
:meth:`~FreeRoundVote.vote_async`); a pushed rank that heard nothing within the timeout asks by
:meth:`FreeRoundVote.settle`, which decides the round not free if it is still open.

A round's state is dropped once every rank has its answer, so the vote's memory does not grow
with a run's length; the decisions of the last rounds are kept, for a rank that asks again (its
pushed answer was on its way when it gave up waiting). Each decision is journaled before any
rank is given it: a restarted host gives a rank that asks again (Ray retries the call) the
decision the others already acted on.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

from compat_core import settings
from compat_core.semantics.records import RoundKey, WorldSizes

# How long a rank waits for the others to say whether a round carries a checkpoint.
VOTE_TIMEOUT_ENV_VAR = settings.VOTE_TIMEOUT_S.name
VOTE_TIMEOUT_S = settings.VOTE_TIMEOUT_S.default


def vote_timeout_s() -> float:
    """The vote's timeout: ``COMPAT_VOTE_TIMEOUT_S`` (read on the driver when a run starts),
    else :data:`VOTE_TIMEOUT_S`."""
    return settings.VOTE_TIMEOUT_S.get()


class _Round:
    """One round's votes, its decision once made, which ranks have it, and the event its
    waiting ranks sleep on (set once, when the round is decided)."""

    __slots__ = ("answered", "decided", "free", "loop_decided", "pushed", "votes")

    def __init__(self) -> None:
        self.votes: set[int] = set()  # ranks that voted (every vote so far free while undecided)
        self.answered: set[int] = set()
        self.pushed: set[int] = set()  # ranks waiting for the decision on their answer connection
        self.decided = threading.Event()  # what ranks waiting on threads sleep on
        # What ranks waiting as coroutines sleep on (vote_async: the ledger's host), and its loop.
        self.loop_decided: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        self.free = False

    def wait_in(self, loop: asyncio.AbstractEventLoop) -> asyncio.Event:
        """The event a coroutine on ``loop`` waits on (one loop per vote: the host's)."""
        if self.loop_decided is None:
            self.loop_decided = (loop, asyncio.Event())
        return self.loop_decided[1]


# Pushes a round's decision to a rank: ``push(rank, key, free)``; False when it could not (the
# rank then asks, by an actor call, when its wait times out).
Push = Callable[[int, RoundKey, bool], bool]


class FreeRoundVote:
    """The vote of a run of ``world_size`` ranks (each attempt's own number: :class:`WorldSizes`).
    Its cost is linear in the ranks: a vote is a few set operations, and the ranks waiting for a
    round are woken once, when it is decided (pushed ranks are each sent the decision once;
    ranks in an actor call each sleep on their round's event, not on one condition every vote
    notifies). ``push`` delivers decisions to
    the ranks that voted by :meth:`vote_pushed` (the record channel's answer connections)."""

    def __init__(
        self,
        world_size: int | WorldSizes,
        timeout_s: float | None = None,
        log: Callable[..., object] | None = None,
        push: Push | None = None,
    ) -> None:
        self.sizes = WorldSizes.given(world_size)
        self._log = log
        self.push = push
        self.timeout_s = VOTE_TIMEOUT_S if timeout_s is None else timeout_s
        self._rounds: dict[RoundKey, _Round] = {}
        self._recent: dict[RoundKey, bool] = {}  # the last rounds' decisions (recent())
        self._lock = threading.Lock()

    def vote(self, key: RoundKey, rank: int, free: bool, wait: bool) -> bool:
        """Rank ``rank`` says whether its report of round ``key`` is free; returns the round's
        decision: ``True`` when the whole round is free (the rank delivers it without Ray),
        ``False`` when it goes through Ray's report. A rank whose report is not free (``wait``
        false) learns nothing it needs: it goes through Ray whatever the others said."""
        with self._lock:
            round_ = self._cast(key, rank, free)
            if not wait or round_.decided.is_set():
                return self._answer(key, round_, rank)
        round_.decided.wait(self.timeout_s)  # woken once, by the decision (or the timeout)
        return self._after_waiting(key, round_, rank)

    def vote_pushed(self, key: RoundKey, rank: int, free: bool) -> None:
        """Rank ``rank``'s vote from the record channel: a free rank is pushed the round's
        decision, now if it is made, else when it is; a rank whose report is not free goes
        through Ray's report without waiting (it is told nothing)."""
        with self._lock:
            round_ = self._cast(key, rank, free)
            if not free:
                self._answer(key, round_, rank)
            elif round_.decided.is_set():
                self._push(key, round_, rank)
            else:
                round_.pushed.add(rank)

    def settle(self, key: RoundKey, rank: int) -> bool:
        """The decision for a pushed rank that heard none within the timeout (or whose answer
        connection broke): the round's, else -- still open -- *not free*, for every rank."""
        with self._lock:
            round_ = self._cast(key, rank, True)
            round_.pushed.discard(rank)  # answered here
            if not round_.decided.is_set():
                self._decide(key, round_, False)
            return self._answer(key, round_, rank)

    def _push(self, key: RoundKey, round_: _Round, rank: int) -> None:
        """Send the round's decision to ``rank`` (under the lock): answered if it could be."""
        if self.push is not None and self.push(rank, key, round_.free):
            self._answer(key, round_, rank)

    def _cast(self, key: RoundKey, rank: int, free: bool) -> _Round:
        """Count rank ``rank``'s vote in round ``key`` (under the lock), deciding the round when
        the vote does: not free at once, free with the last rank's vote."""
        round_ = self._rounds.get(key)
        if round_ is None:
            round_ = _Round()
            if key in self._recent:  # decided and answered, asked again (an answer lost on its way)
                round_.free = self._recent[key]
                round_.decided.set()
                return round_  # the same decision, from a round not kept
            self._rounds[key] = round_
        round_.votes.add(rank)
        if not round_.decided.is_set():
            if not free:
                self._decide(key, round_, False)
            elif len(round_.votes) >= self.sizes.of(key[0]):  # undecided: every vote so far was free
                self._decide(key, round_, True)
        return round_

    async def vote_async(self, key: RoundKey, rank: int, free: bool, wait: bool) -> bool:
        """:meth:`vote` for a caller on an event loop (the ledger's host, an async Ray actor): a
        rank waiting for the round's decision holds no thread, only a coroutine."""
        with self._lock:
            round_ = self._cast(key, rank, free)
            if not wait or round_.decided.is_set():
                return self._answer(key, round_, rank)
            decided = round_.wait_in(asyncio.get_running_loop())
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(decided.wait(), self.timeout_s)
        return self._after_waiting(key, round_, rank)

    def _after_waiting(self, key: RoundKey, round_: _Round, rank: int) -> bool:
        """The decision a rank that waited is given: the round's, or, when it waited the whole
        timeout, not free (the round goes through Ray), decided for every rank."""
        with self._lock:
            if not round_.decided.is_set():
                self._decide(key, round_, False)
            return self._answer(key, round_, rank)

    def _decide(self, key: RoundKey, round_: _Round, free: bool) -> None:
        """Journaled first (a restarted host gives the same decision), then every waiting rank
        of the round woken, once."""
        if self._log is not None:
            self._log("vote", key, free)
        round_.free = free
        round_.decided.set()
        self._remember(key, free)
        for rank in sorted(round_.pushed):
            self._push(key, round_, rank)
        round_.pushed.clear()
        if round_.loop_decided is not None:
            loop, decided = round_.loop_decided
            try:
                on_loop = asyncio.get_running_loop() is loop
            except RuntimeError:
                on_loop = False
            if on_loop:
                decided.set()
            else:
                loop.call_soon_threadsafe(decided.set)

    def _answer(self, key: RoundKey, round_: _Round, rank: int) -> bool:
        """Rank ``rank`` has the round's decision; once every rank has, the round leaves memory."""
        round_.answered.add(rank)
        if len(round_.answered) >= self.sizes.of(key[0]):
            self._rounds.pop(key, None)
        return round_.free

    def _remember(self, key: RoundKey, free: bool) -> None:
        """Keep ``key``'s decision among the :meth:`recent` ones (a few per attempt)."""
        self._recent[key] = free
        if len(self._recent) > 8:
            self._recent = self.recent(self._recent)

    def restore(self, decided: dict[RoundKey, bool]) -> None:
        """A lost host's decisions (from its journal); only :meth:`recent` ones are kept."""
        with self._lock:
            for key, free in self.recent(decided).items():
                round_ = self._rounds.setdefault(key, _Round())
                round_.free = free
                round_.decided.set()
                self._recent[key] = free

    @staticmethod
    def recent(decided: dict[RoundKey, bool]) -> dict[RoundKey, bool]:
        """Each attempt's last three rounds' decisions: the ranks are never further apart (a
        free round waits for every rank's vote, any other round for Ray's report, a barrier),
        so no rank can still ask about an earlier one."""
        last: dict[int, int] = {}
        for attempt, index in decided:
            last[attempt] = max(index, last.get(attempt, index))
        return {key: free for key, free in decided.items() if key[1] >= last[key[0]] - 2}

    def pending(self) -> int:
        """Rounds whose state is still held (some rank voted, and not every rank has its answer)."""
        with self._lock:
            return sum(1 for round_ in self._rounds.values() if round_.votes)
