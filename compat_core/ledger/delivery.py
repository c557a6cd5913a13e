"""Complete rounds delivered in order, across attempts, to the round sink (V1's live logs)
and the user's callbacks, as V2's controller calls them: ``after_report`` once per round,
``after_exception`` once per failed attempt, after that attempt's rounds.

Delivery's one lock orders everything handed to callbacks; what was delivered and the
callbacks' failures are kept in small logs of their own, readable while a callback runs.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

from compat_core.ledger.records import CallbackFailure, Record, RoundKey


class Log:
    """A list appended and read by several threads."""

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._lock = threading.Lock()

    def append(self, item: Any) -> None:
        with self._lock:
            self._items.append(item)

    def since(self, count: int) -> list[Any]:
        with self._lock:
            return self._items[count:]


class RoundDelivery:
    """Hands complete rounds on in ``(attempt, index)`` order (a threaded actor may store
    them out of order): a later attempt's round, or the end of the run, means an attempt
    ended, and its remaining complete rounds go first."""

    def __init__(
        self,
        world_size: int,
        callbacks: list[Any],
        run_context: Any,
        round_sink: Callable[[dict[int, Record]], None] | None,
    ) -> None:
        self.world_size = world_size
        self.callbacks = callbacks
        self._run_context = run_context
        self._round_sink = round_sink
        self.delivered = Log()  # dict[int, Record] per round, in delivery order
        self.failures = Log()  # CallbackFailure, in the order they happened
        self._complete: dict[RoundKey, dict[int, Record]] = {}
        self._next: RoundKey = (0, 0)
        self._failed_attempts: set[int] = set()
        self._lock = threading.Lock()

    def round_complete(self, key: RoundKey, round_: dict[int, Record]) -> None:
        with self._lock:
            self._complete[key] = round_
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

    def finish(self) -> None:
        """The run ended: every complete round still held is delivered."""
        with self._lock:
            self._drain(final=True)

    def _drain(self, final: bool = False, through_attempt: int | None = None) -> None:
        while True:
            if self._next in self._complete:
                attempt, index = self._next
                self._deliver(self._next, self._complete.pop(self._next))
                self._next = (attempt, index + 1)
                continue
            attempt = self._next[0]
            later = [k[0] for k in self._complete if k[0] > attempt]
            ended = final or (through_attempt is not None and through_attempt >= attempt)
            if not later and not ended:
                return
            for key in sorted(k for k in self._complete if k[0] == attempt):
                self._deliver(key, self._complete.pop(key))
            if not later:
                return
            self._next = (min(later), 0)

    def _deliver(self, key: RoundKey, round_: dict[int, Record]) -> None:
        self.delivered.append(round_)
        if self._round_sink is not None:
            self._call(self._round_sink, "__call__", key[1], round_)
        if not self.callbacks:
            return
        records = [round_[i] for i in range(self.world_size)]
        metrics = [dict(r.metrics) for r in records]
        checkpoint = next((r.checkpoint for r in records if r.has_checkpoint), None)
        for callback in self.callbacks:
            self._call(callback, "after_report", key[1], self._run_context, metrics, checkpoint)

    def _call(self, callback: Any, hook: str, index: int | None, *args: Any) -> None:
        try:
            getattr(callback, hook)(*args)
        except Exception as exc:  # a user callback must not take the run down
            name = getattr(callback, "__qualname__", None) or type(callback).__name__
            failure = CallbackFailure(name, hook, index, f"{type(exc).__name__}: {exc}", traceback.format_exc())
            self.failures.append(failure)
