"""The run ledger: every worker's reports, gathered in one actor while a run goes on.

Workers send each ``report()`` here (fire-and-forget). The ledger gives the driver what
Ray itself drops (other ranks' metrics, rank 0's return value under V1, V1-only usage
seen on workers) and, under v1, plays the part of V2's controller: it calls
``UserCallback.after_report`` once per complete round and runs async validations one at
a time. Everything but the Ray task launch is plain code, tested without a cluster.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compat import _messages
from compat._model import CheckpointStatus, ReportRound, ValidationOutcome, WorkerReport
from compat._usage import Usage, UsageLog
from compat._validation import kwargs_and_timeout


@dataclass
class CallbackFailure:
    callback: str
    hook: str
    round_index: int | None
    error: str
    traceback: str

    def message(self) -> str:
        return _messages.callback_failed(self.callback, self.hook, self.round_index, self.error)


@dataclass
class Record:
    """One worker's report as the ledger stores it."""

    rank: int
    index: int
    metrics: dict[str, Any]
    has_checkpoint: bool
    wants_validation: bool
    timestamp: float
    checkpoint: Any = None
    checkpoint_dir_name: str | None = None


@dataclass
class LedgerSnapshot:
    """What the driver receives after ``fit()``."""

    world_size: int
    records: list[Record]
    validations: dict[int, ValidationOutcome]
    return_value: Any
    usages: list[Usage]
    worker_errors: dict[int, BaseException]
    callback_failures: list[CallbackFailure]

    def rounds(self) -> list[ReportRound]:
        """Complete rounds, in order (a round missing a rank is cut off by a failure)."""
        by_index: dict[int, dict[int, Record]] = {}
        for record in self.records:
            by_index.setdefault(record.index, {})[record.rank] = record
        rounds = []
        for index in sorted(by_index):
            ranks = by_index[index]
            if len(ranks) < self.world_size:
                break
            reports = tuple(
                WorkerReport(r.rank, r.metrics, r.has_checkpoint, r.wants_validation)
                for r in (ranks[i] for i in range(self.world_size))
            )
            dir_name = next((r.checkpoint_dir_name for r in ranks.values() if r.checkpoint_dir_name), None)
            rounds.append(ReportRound(index, reports, dir_name, self.validations.get(index)))
        return rounds

    def rank0_timestamps(self) -> list[float]:
        return [r.timestamp for r in sorted(self.records, key=lambda r: r.index) if r.rank == 0]


# Runs one validation: (fn, checkpoint, kwargs, remote_kwargs, timeout_s) -> outcome.
ValidationRunner = Callable[[Callable[..., Any], Any, dict[str, Any], dict[str, Any], float | None], ValidationOutcome]


class RunLedger:
    """Collects a run's reports; under v1 also emulates V2's controller hooks."""

    def __init__(
        self,
        world_size: int,
        *,
        callbacks: list[Any] | None = None,
        run_context: Any = None,
        validation_runner: ValidationRunner | None = None,
    ) -> None:
        self.world_size = world_size
        self._callbacks = list(callbacks or [])
        self._run_context = run_context
        self._records: list[Record] = []
        self._pending: dict[int, dict[int, Record]] = {}
        self._validations: dict[int, ValidationOutcome] = {}
        self._return_value: Any = None
        self._usage = UsageLog()
        self._worker_errors: dict[int, BaseException] = {}
        self._callback_failures: list[CallbackFailure] = []
        self._lock = threading.Lock()
        self._validation_config: Any = None
        self._runner = validation_runner
        self._queue: queue.Queue[
            tuple[int, Callable[..., Any], Any, dict[str, Any], dict[str, Any], float | None] | None
        ] = queue.Queue()
        self._validator: threading.Thread | None = None
        self._seed_validations: dict[str, Any] = {}
        self._callback_lock = threading.Lock()
        self._complete: dict[int, dict[int, Record]] = {}
        self._next_round = 0

    # -- called by workers -------------------------------------------------
    def record(self, record: Record, validation: tuple[Any, Any] | None = None) -> None:
        """Store one report; ``validation`` is ``(persisted checkpoint, request)`` under v1."""
        with self._lock:
            self._records.append(record)
            round_ = self._pending.setdefault(record.index, {})
            round_[record.rank] = record
            complete = len(round_) == self.world_size
            if complete:
                del self._pending[record.index]
        if validation is not None:
            self._enqueue_validation(record.index, validation)
        if complete:
            self._round_complete(record.index, round_)

    def use_validation_config(self, config: Any) -> None:
        """The trainer's validation config (it holds this ledger's handle, so comes later)."""
        self._validation_config = config

    def store_seed_validation(self, token: str, seed: Any) -> None:
        """Keep ``report(validate_fn=..., validate_config=...)``'s function for the dispatcher."""
        with self._lock:
            self._seed_validations[token] = seed

    def seed_validation(self, token: str) -> Any:
        with self._lock:
            return self._seed_validations[token]

    def worker_done(
        self, rank: int, return_value: Any, usages: list[Usage], error: BaseException | None = None
    ) -> None:
        with self._lock:
            if rank == 0:
                self._return_value = return_value
            self._usage.merge(usages)
            if error is not None:
                self._worker_errors[rank] = error

    # -- called by the driver ----------------------------------------------
    def callback_failed(self, failure: CallbackFailure) -> None:
        """A callback running elsewhere (V2's controller) raised."""
        with self._lock:
            self._callback_failures.append(failure)

    def close(self, fire_after_exception: bool = False) -> LedgerSnapshot:
        """Wait for pending validations, fire ``after_exception``, and hand everything over."""
        if self._validator is not None:
            self._queue.put(None)
            self._validator.join()
            self._validator = None
        if fire_after_exception and self._worker_errors:
            errors = dict(self._worker_errors)
            for callback in self._callbacks:
                self._call(callback, "after_exception", None, self._run_context, errors)
        with self._lock:
            return LedgerSnapshot(
                world_size=self.world_size,
                records=list(self._records),
                validations=dict(self._validations),
                return_value=self._return_value,
                usages=self._usage.as_list(),
                worker_errors=dict(self._worker_errors),
                callback_failures=list(self._callback_failures),
            )

    # -- internals -----------------------------------------------------------
    def _round_complete(self, index: int, round_: dict[int, Record]) -> None:
        """Fire ``after_report`` in round order: a threaded actor may run calls out of order."""
        with self._callback_lock:
            self._complete[index] = round_
            while self._next_round in self._complete:
                self._after_report(self._next_round, self._complete.pop(self._next_round))
                self._next_round += 1

    def _after_report(self, index: int, round_: dict[int, Record]) -> None:
        if not self._callbacks:
            return
        records = [round_[i] for i in range(self.world_size)]
        metrics = [dict(r.metrics) for r in records]
        checkpoint = next((r.checkpoint for r in records if r.has_checkpoint), None)
        for callback in self._callbacks:
            self._call(callback, "after_report", index, self._run_context, metrics, checkpoint)

    def _call(self, callback: Any, hook: str, index: int | None, *args: Any) -> None:
        try:
            getattr(callback, hook)(*args)
        except Exception as exc:  # a user callback must not take the run down
            self._callback_failures.append(
                CallbackFailure(
                    type(callback).__name__,
                    hook,
                    index,
                    f"{type(exc).__name__}: {exc}",
                    traceback.format_exc(),
                )
            )

    def _enqueue_validation(self, index: int, validation: tuple[Any, Any]) -> None:
        if self._runner is None or self._validation_config is None:
            raise RuntimeError("this ledger was created without validation support")
        checkpoint, request = validation
        config = self._validation_config
        kwargs, timeout_s = kwargs_and_timeout(config, request)
        if self._validator is None:
            self._validator = threading.Thread(target=self._validate_loop, daemon=True)
            self._validator.start()
        self._queue.put((index, config.fn, checkpoint, kwargs, dict(config.ray_remote_kwargs), timeout_s))

    def _validate_loop(self) -> None:
        assert self._runner is not None
        while True:
            item = self._queue.get()
            if item is None:
                return
            index, fn, checkpoint, kwargs, remote_kwargs, timeout_s = item
            outcome = self._runner(fn, checkpoint, kwargs, remote_kwargs, timeout_s)
            with self._lock:
                self._validations[index] = outcome


def ray_validation_runner(
    fn: Callable[..., Any],
    checkpoint: Any,
    kwargs: dict[str, Any],
    remote_kwargs: dict[str, Any],
    timeout_s: float | None,
) -> ValidationOutcome:
    """Run one validation as a Ray task, as V2's controller does (timeout from launch)."""
    import ray

    task = ray.remote(_run_validation).options(**remote_kwargs).remote(fn, checkpoint, kwargs)
    start = time.monotonic()
    ready, _ = ray.wait([task], timeout=timeout_s)
    if not ready:
        ray.cancel(task, force=True)
        elapsed = time.monotonic() - start
        return ValidationOutcome(CheckpointStatus.VALIDATION_TIMEOUT, error=f"timed out after {elapsed:.1f}s")
    try:
        return ValidationOutcome(CheckpointStatus.VALIDATED, ray.get(task))
    except Exception as exc:
        return ValidationOutcome(CheckpointStatus.VALIDATION_FAILED, error=f"{type(exc).__name__}: {exc}")


def _run_validation(fn: Callable[..., Any], checkpoint: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = fn(checkpoint, **kwargs)
    return result


def remote_ledger_class() -> Any:
    """The ledger as a Ray actor: no CPU, threaded so validation runs beside ``record``."""
    import ray

    return ray.remote(num_cpus=0, max_concurrency=8)(RunLedger)  # type: ignore[call-overload]  # Ray's stubs omit actor options
