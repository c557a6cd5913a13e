"""The run ledger: every worker's reports, gathered in one actor while a run goes on.

Workers send each ``report()`` here (written to the socket of compat_core.channel, or as
fire-and-forget actor calls). The ledger gives the driver what Ray itself drops (other
ranks' metrics, rank 0's return value under V1, V1-only usage seen on workers) and,
under v1, plays the part of V2's controller: it calls
``UserCallback.after_report`` once per complete round and runs async validations one at
a time. Everything but the Ray task launch is plain code, tested without a cluster.
"""

from __future__ import annotations

import os
import queue
import re
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compat_core import channel, messages, releases, switch
from compat_core.errors import InvalidSwitchValueError
from compat_core.model import (
    CheckpointStatus,
    ReportRound,
    Retention,
    ValidationOutcome,
    WorkerReport,
    checkpoint_status,
    merge_validation,
    retained,
)
from compat_core.usage import Usage, UsageLog
from compat_core.validation import kwargs_and_timeout


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


# A round is identified by (attempt, index): a retried attempt starts again at index 0.
RoundKey = tuple[int, int]


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

    def rank0_records(self) -> list[Record]:
        return sorted((r for r in self.records if r.rank == 0), key=lambda r: r.key)


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


# How long ``worker_done`` waits for a worker's records still on their way.
_ARRIVAL_TIMEOUT_S = 30.0
# How long a failure waits for the other ranks' records of rounds the failed rank completed
# (they come unless a rank died too: a rank that finishes or fails ends the wait).
_GRACE_S = _ARRIVAL_TIMEOUT_S
# How long a rank waits for the others to say whether a round carries a checkpoint.
_VOTE_TIMEOUT_S = 60.0
_V1_CHECKPOINT = re.compile(r"checkpoint_(\d+)")

# Runs one validation: (fn, checkpoint, kwargs, remote_kwargs, timeout_s) -> outcome.
ValidationRunner = Callable[[Callable[..., Any], Any, dict[str, Any], dict[str, Any], float | None], ValidationOutcome]


# The ledger's process unpickles what workers of either engine send (validation requests,
# V2's errors): V2's classes must resolve even where ray.train was imported with V2 off.
# Done at import, which happens in the actor's process before any argument is unpickled.
releases.expose_v2_names()


class RunLedger:
    """Collects a run's reports; under v1 also emulates V2's controller hooks.

    ``round_sink`` (optional) is called with each complete round's records, in the order
    ``after_report`` sees them: the live V1 logs under v2 are written from it.
    """

    def __init__(
        self,
        world_size: int,
        *,
        callbacks: list[Any] | None = None,
        run_context: Any = None,
        validation_runner: ValidationRunner | None = None,
        round_sink: Callable[[dict[int, Record]], None] | None = None,
        retention: Retention | None = None,
    ) -> None:
        self.world_size = world_size
        self._retention = retention or Retention()
        self._callbacks = list(callbacks or [])
        self._run_context = run_context
        self._round_sink = round_sink
        self._records: list[Record] = []
        self._pending: dict[RoundKey, dict[int, Record]] = {}
        self._validations: dict[RoundKey, ValidationOutcome] = {}
        self._return_value: Any = None
        self._usage = UsageLog()
        self._worker_errors: dict[int, BaseException] = {}
        self._failures: dict[int, dict[int, BaseException]] = {}
        self._failures_fired: set[int] = set()
        self._starts: dict[int, int] = {}
        self._finished: dict[int, set[int]] = {}  # attempt -> ranks that called worker_done
        self._callback_failures: list[CallbackFailure] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._counts: dict[tuple[int, int], int] = {}
        self._validation_config: Any = None
        self._runner = validation_runner
        self._queue: queue.Queue[
            tuple[RoundKey, Callable[..., Any], Any, dict[str, Any], dict[str, Any], float | None] | None
        ] = queue.Queue()
        self._validator: threading.Thread | None = None
        self._seed_validations: dict[str, Any] = {}
        self._callback_lock = threading.Lock()
        self._complete: dict[RoundKey, dict[int, Record]] = {}
        self._next_round: RoundKey = (0, 0)
        self._delivered: list[dict[int, Record]] = []
        self._votes: dict[RoundKey, dict[int, bool]] = {}
        self._voted = threading.Condition()
        self._seen: set[tuple[int, int, int]] = set()  # (attempt, rank, index) of each record
        self._listener: channel.Listener | None = None

    def open_channel(self, host: str | None = None) -> channel.Address | None:
        """Listen for records written by the workers (compat_core.channel); returns the address
        and key they connect with (each worker asks; the first call opens it), or None when
        this process cannot listen (the workers then make actor calls). ``host`` defaults to
        this node's IP as Ray knows it."""
        with self._lock:
            if self._listener is None:
                if host is None:
                    host = node_ip()
                try:
                    self._listener = channel.Listener(host, lambda message: self.record(*message))
                except OSError as exc:
                    channel.logger.warning("compat's run ledger cannot listen on %s (%s): actor calls", host, exc)
                    return None
            return self._listener.address

    # -- called by workers -------------------------------------------------
    def worker_started(self, rank: int) -> int:
        """A worker of ``rank`` starts the training function; returns its attempt number."""
        with self._lock:
            attempt = self._starts.get(rank, 0)
            self._starts[rank] = attempt + 1
            return attempt

    def next_checkpoint_index(self, attempt: int) -> int:
        """The number V1 gives the next checkpoint of ``attempt``: one past the highest
        ``checkpoint_00000N`` an earlier attempt persisted (V1 numbers across restores)."""
        with self._lock:
            numbers = [
                int(match.group(1))
                for r in self._records
                if r.attempt < attempt and r.checkpoint_dir_name
                for match in [_V1_CHECKPOINT.fullmatch(r.checkpoint_dir_name)]
                if match
            ]
        return max(numbers) + 1 if numbers else 0

    def record(self, record: Record, validation: tuple[Any, Any] | None = None) -> None:
        """Store one report; ``validation`` is ``(persisted checkpoint, request)`` under v1.
        A record already stored (sent again after the channel broke) is ignored."""
        with self._lock:
            seen = (record.attempt, record.rank, record.index)
            if seen in self._seen:
                return
            self._seen.add(seen)
            self._records.append(record)
            self._usage.merge(record.usages)
            worker = (record.attempt, record.rank)
            self._counts[worker] = self._counts.get(worker, 0) + 1
            self._arrived.notify_all()
            round_ = self._pending.setdefault(record.key, {})
            round_[record.rank] = record
            complete = len(round_) == self.world_size
            if complete:
                del self._pending[record.key]
        if validation is not None:
            self._enqueue_validation(record.key, validation)
        if complete:
            self._round_complete(record.key, round_)

    def vote_free_round(self, attempt: int, index: int, rank: int, free: bool, wait: bool) -> bool:
        """Each rank says whether its report of round ``(attempt, index)`` carries nothing
        V2 keeps (no checkpoint, no validation). With ``wait``, blocks until every rank has
        voted and returns whether the whole round is free, so it can skip V2's controller;
        any other answer (or a rank that never votes) sends the round through Ray."""
        key = (attempt, index)
        with self._voted:
            self._votes.setdefault(key, {})[rank] = free
            self._voted.notify_all()
            if not wait:
                return False
            done = self._voted.wait_for(lambda: len(self._votes[key]) >= self.world_size, timeout=_VOTE_TIMEOUT_S)
            return bool(done and all(self._votes[key].values()))

    def reported_checkpoints(
        self, attempt: int, rank: int, sent: int, validated: bool, timeout_s: float | None
    ) -> list[tuple[Any, dict[str, Any], CheckpointStatus]]:
        """Every checkpoint round so far, as ``(checkpoint, metrics, status)`` in report
        order, once the asking worker's ``sent`` rounds are complete and, with ``validated``,
        once their validations finished (``get_all_reported_checkpoints`` under v1)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s

        def left() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        with self._lock:
            self._arrived.wait_for(
                lambda: (
                    self._counts.get((attempt, rank), 0) >= sent
                    and not any((attempt, i) in self._pending for i in range(sent))
                ),
                timeout=left(),
            )
            complete = {k: r for k, r in group_rounds(self._records).items() if len(r) == self.world_size}
            rounds = [to_round(key, ranks, self.world_size) for key, ranks in sorted(complete.items())]
            wanted = [(r.attempt, r.index) for r in rounds if r.has_checkpoint and r.wants_validation]
            if validated:
                self._arrived.wait_for(lambda: all(key in self._validations for key in wanted), timeout=left())
            found = []
            for round_ in rounds:
                if not round_.has_checkpoint:
                    continue
                key = (round_.attempt, round_.index)
                outcome = self._validations.get(key)
                status = outcome.status if outcome is not None else checkpoint_status(round_)
                ranks = complete[key]
                checkpoint = next((ranks[i].checkpoint for i in sorted(ranks) if ranks[i].checkpoint is not None), None)
                if checkpoint is None:
                    continue  # not persisted (yet)
                found.append((checkpoint, merge_validation(round_.rank0_metrics, outcome), status))
            # Those V1's checkpoint manager keeps (it deletes the others on its own schedule).
            return [found[i] for i in retained([m for _, m, _ in found], self._retention)]

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
        self,
        rank: int,
        return_value: Any,
        usages: list[Usage],
        error: BaseException | None = None,
        attempt: int = 0,
        sent: int = 0,
    ) -> None:
        """A worker finished (or failed) after sending ``sent`` records. Calls run on a
        thread pool, so this waits until those records are in: ``after_exception`` then
        follows every round of the attempt, and ``close()`` misses nothing."""
        with self._lock:
            self._arrived.wait_for(lambda: self._counts.get((attempt, rank), 0) >= sent, timeout=_ARRIVAL_TIMEOUT_S)
            finished = self._finished.setdefault(attempt, set())
            finished.add(rank)
            self._arrived.notify_all()  # a failure waiting for this rank's records stops waiting
            if rank == 0:
                self._return_value = return_value
            self._usage.merge(usages)
            if error is not None:
                self._worker_errors[rank] = error
                self._failures.setdefault(attempt, {})[rank] = error
                # The other ranks' records of the rounds this rank completed may still be on
                # their way (a loaded machine delays them by seconds): wait for them, or for
                # the ranks that did not send them to finish, so after_exception follows those
                # rounds. Those ranks are still running: the engine learns of this failure
                # only when this call returns.
                self._arrived.wait_for(
                    lambda: (
                        not any((attempt, i) in self._pending for i in range(sent)) or len(finished) >= self.world_size
                    ),
                    timeout=_GRACE_S,
                )
        if error is not None and self._callbacks:
            self._fire_after_exception(attempt)

    # -- called by the driver ----------------------------------------------
    def delivered_since(self, count: int) -> list[dict[int, Record]]:
        """The complete rounds delivered after the first ``count``, in delivery order (the
        driver polls this to feed Ray Tune callbacks as the run goes on)."""
        with self._lock:
            return self._delivered[count:]

    def callback_failed(self, failure: CallbackFailure) -> None:
        """A callback running elsewhere (V2's controller) raised."""
        with self._lock:
            self._callback_failures.append(failure)

    def close(self) -> LedgerSnapshot:
        """Wait for pending validations and hand everything over."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._validator is not None:
            self._queue.put(None)
            self._validator.join()
            self._validator = None
        with self._callback_lock:
            self._drain(final=True)
        with self._lock:
            return LedgerSnapshot(
                world_size=self.world_size,
                records=list(self._records),
                validations=dict(self._validations),
                return_value=self._return_value,
                usages=self._usage.as_list(),
                worker_errors=dict(self._worker_errors),
                callback_failures=list(self._callback_failures),
                attempts=max(self._starts.values(), default=1),
                failures=[dict(self._failures[a]) for a in sorted(self._failures)],
            )

    # -- internals -----------------------------------------------------------
    def _round_complete(self, key: RoundKey, round_: dict[int, Record]) -> None:
        """Deliver rounds in (attempt, index) order: a threaded actor may run calls out of order."""
        with self._callback_lock:
            self._complete[key] = round_
            self._drain()

    def _drain(self, final: bool = False, through_attempt: int | None = None) -> None:
        """Deliver every complete round that is next in order. A later attempt's round (or
        ``final``/``through_attempt``) means the current attempt ended: its remaining complete
        rounds are delivered and the cursor moves on. Caller holds ``_callback_lock``."""
        while True:
            if self._next_round in self._complete:
                attempt, index = self._next_round
                self._deliver(self._next_round, self._complete.pop(self._next_round))
                self._next_round = (attempt, index + 1)
                continue
            attempt = self._next_round[0]
            later = [k[0] for k in self._complete if k[0] > attempt]
            ended = final or (through_attempt is not None and through_attempt >= attempt)
            if not later and not ended:
                return
            for key in sorted(k for k in self._complete if k[0] == attempt):
                self._deliver(key, self._complete.pop(key))
            if not later:
                return
            self._next_round = (min(later), 0)

    def _deliver(self, key: RoundKey, round_: dict[int, Record]) -> None:
        with self._lock:
            self._delivered.append(round_)
        if self._round_sink is not None:
            self._call(self._round_sink, "__call__", key[1], round_)
        self._after_report(key, round_)

    def _fire_after_exception(self, attempt: int) -> None:
        """``after_exception`` once per failed attempt, after that attempt's rounds (as V2)."""
        with self._callback_lock:
            if attempt in self._failures_fired:
                return
            self._failures_fired.add(attempt)
            self._drain(through_attempt=attempt)
            with self._lock:
                errors = dict(self._failures.get(attempt, {}))
            for callback in self._callbacks:
                self._call(callback, "after_exception", None, self._run_context, errors)

    def _after_report(self, key: RoundKey, round_: dict[int, Record]) -> None:
        if not self._callbacks:
            return
        records = [round_[i] for i in range(self.world_size)]
        metrics = [dict(r.metrics) for r in records]
        checkpoint = next((r.checkpoint for r in records if r.has_checkpoint), None)
        for callback in self._callbacks:
            self._call(callback, "after_report", key[1], self._run_context, metrics, checkpoint)

    def _call(self, callback: Any, hook: str, index: int | None, *args: Any) -> None:
        try:
            getattr(callback, hook)(*args)
        except Exception as exc:  # a user callback must not take the run down
            name = getattr(callback, "__qualname__", None) or type(callback).__name__
            self._callback_failures.append(
                CallbackFailure(name, hook, index, f"{type(exc).__name__}: {exc}", traceback.format_exc())
            )

    def _enqueue_validation(self, key: RoundKey, validation: tuple[Any, Any]) -> None:
        if self._runner is None or self._validation_config is None:
            raise RuntimeError("this ledger was created without validation support")
        checkpoint, request = validation
        config = self._validation_config
        kwargs, timeout_s = kwargs_and_timeout(config, request)
        if self._validator is None:
            self._validator = threading.Thread(target=self._validate_loop, daemon=True)
            self._validator.start()
        self._queue.put((key, config.fn, checkpoint, kwargs, dict(config.ray_remote_kwargs), timeout_s))

    def _validate_loop(self) -> None:
        assert self._runner is not None
        while True:
            item = self._queue.get()
            if item is None:
                return
            key, fn, checkpoint, kwargs, remote_kwargs, timeout_s = item
            outcome = self._runner(fn, checkpoint, kwargs, remote_kwargs, timeout_s)
            with self._lock:
                self._validations[key] = outcome
                self._arrived.notify_all()


def ray_validation_runner(
    fn: Callable[..., Any],
    checkpoint: Any,
    kwargs: dict[str, Any],
    remote_kwargs: dict[str, Any],
    timeout_s: float | None,
    *,
    switch_value: str | None = None,
) -> ValidationOutcome:
    """Run one validation as a Ray task, as V2's controller does (timeout from launch).

    ``switch_value``: the ``RAY_TRAIN_V2_ENABLED`` the task must see (the backend's, from
    :func:`compat_core.switch.outside_training_value`), whatever the cluster was started with."""
    import ray

    options = task_options(remote_kwargs, switch_value, os.environ.get(switch.ENV_VAR))
    task = ray.remote(_run_validation).options(**options).remote(fn, checkpoint, kwargs)
    start = time.monotonic()
    ready, _ = ray.wait([task], timeout=timeout_s)
    if not ready:
        ray.cancel(task, force=True)
        elapsed = time.monotonic() - start
        return ValidationOutcome(CheckpointStatus.VALIDATION_TIMEOUT, error=f"timed out after {elapsed:.1f}s")
    try:
        return ValidationOutcome(CheckpointStatus.VALIDATED, ray.get(task))
    except Exception as exc:
        error = messages.validation_failed(
            f"{type(exc).__name__}: {exc}", device_needs_worker=releases.V2_DEVICE_NEEDS_WORKER and switch_value == "1"
        )
        return ValidationOutcome(CheckpointStatus.VALIDATION_FAILED, error=error)


def task_options(remote_kwargs: dict[str, Any], switch_value: str | None, worker_value: str | None) -> dict[str, Any]:
    """The ``.options()`` of a validation task: the user's, plus ``RAY_TRAIN_V2_ENABLED`` in
    its runtime environment when the cluster's workers (``worker_value``: this actor's own,
    which they share) would read the switch otherwise. Only then: a runtime environment
    starts a pool of workers of its own. A value the user set in ``runtime_env`` wins."""
    if switch_value is None or _reads_as(worker_value) == _reads_as(switch_value):
        return remote_kwargs
    runtime_env = dict(remote_kwargs.get("runtime_env") or {})
    env_vars = dict(runtime_env.get("env_vars") or {})
    if switch.ENV_VAR in env_vars:
        return remote_kwargs
    runtime_env["env_vars"] = {**env_vars, switch.ENV_VAR: switch_value}
    return {**remote_kwargs, "runtime_env": runtime_env}


def _reads_as(value: str | None) -> str | None:
    try:
        return switch.parse(value)
    except InvalidSwitchValueError:
        return None  # not a value compat accepts: set the one it means


def _run_validation(fn: Callable[..., Any], checkpoint: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = fn(checkpoint, **kwargs)
    return result


def node_ip() -> str:
    """This process's node IP as Ray knows it (loopback outside Ray)."""
    try:
        import ray

        return str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]  # untyped in Ray
    except Exception:
        return "127.0.0.1"


def remote_ledger_class() -> Any:
    """The ledger as a Ray actor: no CPU, threaded so validation runs beside ``record``."""
    import ray

    return ray.remote(num_cpus=0, max_concurrency=8)(RunLedger)  # type: ignore[call-overload]  # Ray's stubs omit actor options


def ledger_concurrency(world_size: int) -> int:
    """Threads the ledger needs: every rank may wait in ``vote_free_round`` at once, next to
    records, validations and the driver's calls."""
    return world_size + 8
