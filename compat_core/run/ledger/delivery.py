"""Complete rounds delivered in order, across attempts, to the round sink (V1's live logs),
the user's callbacks, as V2's controller calls them (``after_report`` once per round,
``after_exception`` once per failed attempt, after that attempt's rounds), and the driver's
consumers. A round's V1 row, when the run makes them, is made here, once, for all of them.

Delivery's one lock orders everything handed to callbacks; what was delivered and the
callbacks' failures are kept in small logs of their own, readable while a callback runs.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any, Protocol

from compat_core.semantics.records import CallbackFailure, DeliveredRound, Record, RoundKey


class RowMaker(Protocol):
    """Makes rank 0's V1 row of each round, in delivery order (``v1_logs.V1Rows``: its numbering
    runs on from round to round, so each round goes through it exactly once)."""

    def round_row(self, round_: dict[int, Record]) -> dict[str, Any]: ...


class RoundSink(Protocol):
    """Called with each delivered round (V1's live logs); it may also have ``replay(round_)``
    (a restarted host's rounds the lost one had handed over), ``resume()`` and ``finish()``."""

    def __call__(self, round_: DeliveredRound) -> None: ...


class Log:
    """A list appended and read by several threads (small: one entry per callback failure)."""

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._lock = threading.Lock()

    def append(self, item: Any) -> None:
        with self._lock:
            self._items.append(item)

    def since(self, count: int) -> list[Any]:
        """The items after the first ``count``."""
        with self._lock:
            return self._items[count:]


class Feed:
    """The rounds delivered so far, for the driver's consumers named when the run opened (Ray
    Tune's forwarding inside a trial, Ray Tune callbacks under v2): a round is kept until every
    one of them has read it, so memory holds only what a consumer has not read yet (nothing
    when there is no consumer). A consumer reads with :meth:`since`, waiting in it for the
    next round (it is fed as rounds are delivered, not polled)."""

    def __init__(self, consumers: tuple[str, ...] = (), log: Callable[..., object] | None = None) -> None:
        self._read = dict.fromkeys(consumers, 0)  # consumer -> rounds it has read
        self._log = log  # journals each consumer's progress: a restarted host keeps what it has not read
        self._items: list[DeliveredRound] = []
        self._first = 0  # the position of _items[0]: the rounds before it every consumer read
        self._count = 0  # rounds delivered
        self._changed = threading.Condition()
        self._wakes = 0  # wake() calls so far

    def append(self, item: DeliveredRound) -> None:
        with self._changed:
            self._count += 1
            if self._read:
                self._items.append(item)
            self._changed.notify_all()

    def __len__(self) -> int:
        with self._changed:
            return self._count

    @property
    def has_consumers(self) -> bool:
        return bool(self._read)

    def since(self, consumer: str, count: int, wait_s: float = 0.0) -> list[DeliveredRound]:
        """The rounds after the first ``count`` (``consumer`` has read those: they may go);
        when there are none yet, wait up to ``wait_s`` for one (or a :meth:`wake`)."""
        with self._changed:
            if consumer not in self._read:
                named = ", ".join(map(repr, self._read)) or "none"
                raise ValueError(f"no consumer {consumer!r} was named when the run opened (named: {named})")
            if count > self._read[consumer]:
                self._read[consumer] = min(count, self._count)
                if self._log is not None:
                    self._log("consumed", consumer, self._read[consumer])
                self._forget_read_locked()
            if count < self._first:
                raise ValueError(f"{consumer!r} asks again for rounds from {count}, already read up to {self._first}")
            if wait_s > 0:
                wakes = self._wakes
                self._changed.wait_for(lambda: self._count > count or self._wakes != wakes, timeout=wait_s)
            return self._items[count - self._first :]

    def consumed(self, consumer: str, count: int) -> None:
        """What a lost host's journal says ``consumer`` had read (replayed, not journaled again)."""
        with self._changed:
            if consumer in self._read:
                self._read[consumer] = max(self._read[consumer], count)
                self._forget_read_locked()

    def _forget_read_locked(self) -> None:
        read = min(self._read.values())
        if read > self._first:
            del self._items[: read - self._first]
            self._first = read

    def wake(self) -> None:
        """Readers waiting in :meth:`since` return now (with what there is)."""
        with self._changed:
            self._wakes += 1
            self._changed.notify_all()


class RoundDelivery:
    """Hands complete rounds on in ``(attempt, index)`` order (a threaded actor may store
    them out of order): a later attempt's round, or the end of the run, means an attempt
    ended, and its remaining complete rounds go first.

    A round is handed over on a thread of its own when there is anyone to call (callbacks,
    the round sink): the thread that completed the round (reading a worker's records) goes
    straight back, so a slow ``after_report`` never holds up a worker's records. With no one
    to call, a round is only logged, at once. ``_lock`` orders every call to a callback;
    ``_held_lock`` guards the complete rounds not yet handed over, briefly."""

    def __init__(
        self,
        callbacks: list[Any],
        run_context: Any,
        round_sink: RoundSink | None,
        log: Callable[..., object] | None = None,
        consumers: tuple[str, ...] = (),
        rows: RowMaker | None = None,
    ) -> None:
        self.callbacks = callbacks
        self._run_context = run_context
        self._round_sink = round_sink
        self._rows = rows
        # Journals each round handed over, and each attempt's after_exception, once the sink
        # and callbacks returned: a restarted host hands over only what follows.
        self._log = log
        self.delivered = Feed(consumers, log)  # DeliveredRound, in delivery order
        self.failures = Log()  # CallbackFailure, in the order they happened
        self._complete: dict[RoundKey, dict[int, Record]] = {}
        self._next: RoundKey = (0, 0)
        self._failed_attempts: set[int] = set()
        self._lock = threading.Lock()
        self._held_lock = threading.Lock()
        self._waiting = threading.Event()  # rounds wait for the delivery thread
        self._finished = False
        self._thread: threading.Thread | None = None
        if callbacks or round_sink is not None:
            self._thread = threading.Thread(target=self._deliver_loop, name="compat-ledger-rounds", daemon=True)
            self._thread.start()

    def feeds_anyone(self) -> bool:
        """Whether a delivered round goes to anyone (the sink, a callback, a consumer): only
        then is its delivery journaled, and a restarted host careful not to give it twice."""
        return self._round_sink is not None or bool(self.callbacks) or self.delivered.has_consumers

    def round_complete(self, key: RoundKey, round_: dict[int, Record]) -> None:
        with self._held_lock:
            self._complete[key] = round_
        if self._thread is not None:
            self._waiting.set()
        else:
            with self._lock:
                self._drain()

    def attempt_failed(self, attempt: int, errors: Callable[[], dict[int, BaseException]]) -> None:
        """``after_exception`` once per failed attempt, after that attempt's rounds (as V2),
        with ``errors()``: the attempt's failures by rank once those rounds are delivered."""
        with self._lock:
            if attempt in self._failed_attempts:
                return
            self._failed_attempts.add(attempt)
            self._drain(through_attempt=attempt)
            failures = errors()
            for callback in self.callbacks:
                self._call(callback, "after_exception", None, self._run_context, failures)
            if self._log is not None:
                self._log("after_exception", attempt)

    def replayed(self, key: RoundKey, round_: dict[int, Record]) -> None:
        """A round a lost host had handed over (from its journal, in order): delivered without
        calling anyone again (its row made again, to number on); the round sink, if it can,
        takes note (``replay``)."""
        with self._lock:
            delivered = self._delivered(key, round_)
            self.delivered.append(delivered)
            self._next = (key[0], key[1] + 1)
            self._call_sink_hook("replay", delivered)

    def restore(self, failed_attempts: set[int]) -> None:
        """After the lost host's rounds were :meth:`replayed`: the attempts it had called
        ``after_exception`` for; the round sink, if it can, takes up from there (``resume``).
        Rounds complete but not handed over follow through :meth:`round_complete`."""
        with self._lock:
            self._failed_attempts |= failed_attempts
            self._call_sink_hook("resume")

    def _call_sink_hook(self, hook: str, *args: Any) -> None:
        """The round sink's ``hook``, if it has one (its failure kept as a callback's)."""
        if hasattr(self._round_sink, hook):
            self._call(self._round_sink, hook, None, *args)

    def flush(self) -> None:
        """Return once every round complete by now is handed over, in order."""
        with self._lock:
            self._drain()

    def finish(self) -> None:
        """The run ended: every complete round still held is delivered, then the round sink,
        if it can, finishes (``finish``: V1's logs staged on this node uploaded)."""
        with self._lock:
            self._finished = True
            self._drain(final=True)
            self._call_sink_hook("finish")
        self._waiting.set()
        if self._thread is not None:
            self._thread.join()

    def _deliver_loop(self) -> None:
        while True:
            self._waiting.wait()
            self._waiting.clear()
            with self._lock:
                if self._finished:
                    return
                self._drain()

    def _drain(self, final: bool = False, through_attempt: int | None = None) -> None:
        """Hand over what is complete, in order; hold ``_lock``."""
        while True:
            with self._held_lock:
                round_ = self._complete.pop(self._next, None)
                if round_ is None:
                    attempt = self._next[0]
                    later = [k[0] for k in self._complete if k[0] > attempt]
                    ended = final or (through_attempt is not None and through_attempt >= attempt)
                    if not later and not ended:
                        return
                    # The attempt ended: its complete rounds after a gap go too, in order.
                    rest = sorted(k for k in self._complete if k[0] == attempt)
                    rounds = [(key, self._complete.pop(key)) for key in rest]
            if round_ is not None:
                attempt, index = self._next
                self._deliver(self._next, round_)
                self._next = (attempt, index + 1)
                continue
            for key, held in rounds:
                self._deliver(key, held)
            if not later:
                return
            self._next = (min(later), 0)

    def _delivered(self, key: RoundKey, round_: dict[int, Record]) -> DeliveredRound:
        row = self._rows.round_row(round_) if self._rows is not None else None
        return DeliveredRound(key, round_, row)

    def _deliver(self, key: RoundKey, round_: dict[int, Record]) -> None:
        """The round (with its row, made once) to the sink and every callback, then to the
        driver's consumers."""
        delivered = self._delivered(key, round_)
        if self._round_sink is not None:
            self._call(self._round_sink, "__call__", key[1], delivered)
        if self.callbacks:
            records = [round_[i] for i in sorted(round_)]
            metrics = [dict(r.metrics) for r in records]
            checkpoint = next((r.checkpoint for r in records if r.has_checkpoint), None)
            for callback in self.callbacks:
                self._call(callback, "after_report", key[1], self._run_context, metrics, checkpoint)
        if self._log is not None and self.feeds_anyone():
            self._log("delivered", key)
        self.delivered.append(delivered)

    def _call(self, callback: Any, hook: str, index: int | None, *args: Any) -> None:
        try:
            getattr(callback, hook)(*args)
        except Exception as exc:  # a user callback must not take the run down
            name = getattr(callback, "__qualname__", None) or type(callback).__name__
            failure = CallbackFailure(name, hook, index, f"{type(exc).__name__}: {exc}", traceback.format_exc())
            self.failures.append(failure)
