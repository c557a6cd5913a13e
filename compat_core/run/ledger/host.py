"""The Ray actor that hosts run ledgers, and the handle a run's ledger is called through.

A driver process keeps one host across its fits: a fit opens a run in it (a round trip)
instead of starting a Python process of its own, which cost every fit 0.6-2.2 s
(docs/performance.md). The host is started at the first fit, and again when it is gone or the
process connected to another Ray cluster; a fit wider than its concurrency allows gets a
larger one. It asks for no CPU.

A host whose process dies (a user callback that takes it down, the OOM killer) is restarted by
Ray on the same node, up to ``COMPAT_LEDGER_MAX_RESTARTS`` times (default
:data:`MAX_RESTARTS`): the new process rebuilds every open run from its journal
(:func:`~compat_core.run.ledger.replay.reopen`) before it takes a call, and Ray sends it again the calls the old one
had not answered (``max_task_retries=-1``: every call is safe to repeat). Workers resend what
the old one had not acknowledged (compat_core.run.channel).

Workers and the driver call a run's ledger through its :class:`LedgerClient`: one typed
method per call the run makes, each named and typed as :class:`RunLedger`'s method it calls.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, cast

from compat_core import messages, settings
from compat_core.files import journal, private
from compat_core.releases import adapters, standins
from compat_core.run.ledger.replay import recover, reopen
from compat_core.run.ledger.run import RunLedger
from compat_core.run.ledger.votes import VOTE_TIMEOUT_S
from compat_core.semantics.records import CallbackFailure, DeliveredRound, LedgerSnapshot, Record

if TYPE_CHECKING:
    from compat_core.migration.usage import Usage
    from compat_core.run.channel import Address
    from compat_core.semantics.rounds import CheckpointStatus

logger = logging.getLogger(__name__)

# Where runs' journals are written (journal.py): the driver's node's local disk, in the user's
# private state directory (compat_core.files.private); None: that directory, checked at each fit.
JOURNAL_DIR: str | None = None
# A journal no process wrote for this long belongs to a driver that died: removed (journal.prune).
JOURNAL_MAX_AGE_S = 7 * 86400.0
# How often Ray restarts a host whose process died, by default: a host that keeps dying (a
# callback that ends its process each time) ends its runs after that many, naming itself.
MAX_RESTARTS_ENV_VAR = settings.LEDGER_MAX_RESTARTS.name
MAX_RESTARTS = settings.LEDGER_MAX_RESTARTS.default
# The host is an asyncio Ray actor: a call is a coroutine on its event loop, not a thread. A rank
# waiting in the free-round vote holds only a coroutine (FreeRoundVote.vote_async); every other
# call runs on one of two bounded pools, so the host's threads do not grow with the run's width
# (docs/architecture.md, "Width"). Calls that may wait for other calls (a worker's last records,
# a validation, the next round, the other ranks of a failure) run on their own pool, so the
# calls they wait for are never queued behind them.
CALL_THREADS = 8
WAIT_THREADS = 16
WAITING_CALLS = frozenset(
    {"stored_through", "reported_checkpoints", "delivered_since", "worker_done", "engine_failed", "actor_died"}
)
# Calls a host runs at once (coroutines; Ray's own default for an asyncio actor): a run needs
# every rank's vote at once, next to records, validations and the driver's calls.
MIN_CONCURRENCY = 1000


def ledger_concurrency(world_size: int) -> int:
    """Calls one run may have in the host at once: every rank may wait in ``vote_free_round``
    while it sends records and asks what is stored, next to validations and the driver's calls."""
    return max(MIN_CONCURRENCY, 2 * world_size + 16)


def max_restarts() -> int:
    """``COMPAT_LEDGER_MAX_RESTARTS``, else :data:`MAX_RESTARTS`."""
    return settings.LEDGER_MAX_RESTARTS.get()


class LedgerHost:
    """Run ledgers by run id, in one process. ``index``: a file where the host notes each run's
    journal as it opens the run; a restarted host reopens the runs noted there."""

    def __init__(self, index: str | None = None) -> None:
        # This process unpickles what workers of either engine send (validation requests,
        # V2's errors): V2's classes must resolve even where ray.train was imported with V2
        # off. Done before any run's arguments arrive.
        standins.expose_v2_names()
        self._runs: dict[str, RunLedger] = {}
        self._journals: dict[str, str] = {}  # run id -> its journal
        self._lock = threading.Lock()
        self._calls = ThreadPoolExecutor(CALL_THREADS, thread_name_prefix="compat-ledger-call")
        self._waits = ThreadPoolExecutor(WAIT_THREADS, thread_name_prefix="compat-ledger-wait")
        self._index = index
        self._restarted = _reconstructed()
        if index is not None and os.path.exists(index):
            with private.open_file(index) as f:
                for line in f:
                    run_id, _, path = line.rstrip("\n").partition("\t")
                    if run_id and os.path.exists(path):
                        self._journals[run_id] = path
                        self._reopen(run_id, closed_too=False)

    def _reopen(self, run_id: str, closed_too: bool) -> RunLedger | None:
        """The run ``run_id`` rebuilt from its journal (a run closed before the host died only
        with ``closed_too``: its driver may ask for its snapshot again)."""
        path = self._journals[run_id]
        try:
            if not closed_too and (journal.last(path) or ("",))[0] == "closed":
                return None
            ledger = reopen(path)
        except Exception:
            logger.exception("compat's restarted run ledger cannot rebuild the run of %s", path)
            return None
        with self._lock:
            self._runs[run_id] = ledger
        return ledger

    def _run(self, run_id: str) -> RunLedger:
        with self._lock:
            ledger = self._runs.get(run_id)
        if ledger is None and os.path.exists(self._journals.get(run_id, "")):
            ledger = self._reopen(run_id, closed_too=True)
        if ledger is None:
            raise KeyError(messages.ledger_lost_run(run_id))
        return ledger

    async def open_run(self, run_id: str, world_size: int, options: dict[str, Any]) -> int:
        return await self._on(self._calls, self._open_run, run_id, world_size, options)

    def _open_run(self, run_id: str, world_size: int, options: dict[str, Any]) -> int:
        with self._lock:
            if run_id in self._runs:
                return os.getpid()  # Ray retried the call on a restarted host
            path = options.get("journal_path")
            if path is not None and self._index is not None:
                private.ensure_private(os.path.dirname(self._index))
                with private.open_file(self._index, "a") as f:
                    f.write(f"{run_id}\t{path}\n")
                self._journals[run_id] = path
            self._runs[run_id] = RunLedger(world_size, **options)
        return os.getpid()

    async def call(self, run_id: str, method: str, *args: Any) -> Any:
        """``RunLedger.<method>(*args)`` of the run: what :class:`LedgerClient` sends. The vote
        waits on the event loop; other calls run on the host's pools (:data:`WAITING_CALLS` on
        their own)."""
        if method.startswith("_") or not callable(getattr(RunLedger, method, None)):
            raise AttributeError(f"RunLedger has no call {method!r}")
        with self._lock:
            ledger = self._runs.get(run_id)
        if ledger is None:  # rebuilt from its journal (reading files: not on the loop)
            ledger = await self._on(self._calls, self._run, run_id)
        if method == "vote_free_round":
            return await ledger.vote_free_round_async(*args)
        pool = self._waits if method in WAITING_CALLS else self._calls
        return await self._on(pool, getattr(ledger, method), *args)

    async def close_run(self, run_id: str) -> LedgerSnapshot:
        """The run's snapshot, once its pending validations finished (they may still call
        the run: a validation of the older form fetches its function from it); then the run
        leaves the host."""
        return await self._on(self._waits, self._close_run, run_id)

    def _close_run(self, run_id: str) -> LedgerSnapshot:
        ledger = self._run(run_id)
        snapshot = ledger.close()
        with self._lock:
            self._runs.pop(run_id, None)
        return snapshot

    @staticmethod
    async def _on(pool: ThreadPoolExecutor, function: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(function, *args))

    def alive(self) -> bool:
        return True

    def reusable(self) -> bool:
        """Whether a new run may open here: not once Ray has restarted this host, whose
        restarts are counted over its whole life (a new run gets a host with every restart
        left); it then serves only the runs it was rebuilt with."""
        return not self._restarted

    def runs_open(self) -> int:
        with self._lock:
            return len(self._runs)

    def pid(self) -> int:
        """This host's process (it changes when Ray restarts the host)."""
        return os.getpid()


class LedgerClient:
    """One run's ledger in its host, as the driver and the workers call it: picklable, shipped
    to the workers with the training function. One method per call the run makes, named as
    the :class:`RunLedger` method it calls (whose docstring says what it does). Each waits for
    the ledger's answer, but :meth:`send_record` and :meth:`send_callback_failure`: Ray runs
    the calls of one caller in the order they were made."""

    def __init__(
        self,
        actor: Any,
        run_id: str,
        pid: int,
        journal_path: str | None = None,
        world_size: int = 1,
        max_restarts: int = MAX_RESTARTS,
        vote_timeout_s: float = VOTE_TIMEOUT_S,
    ) -> None:
        self.actor = actor
        self.max_restarts = max_restarts
        self.run_id = run_id
        self.pid = pid  # the host's process
        self.journal_path = journal_path  # on the driver's node: what the host was told
        self.world_size = world_size
        self.vote_timeout_s = vote_timeout_s  # how long a rank waits for a round's decision

    def _send(self, method: Callable[..., Any], *args: Any) -> Any:
        """Call ``method`` of the run's :class:`RunLedger` in the host: its ``ObjectRef``."""
        return self.actor.call.remote(self.run_id, method.__name__, *args)

    def _ask(self, method: Callable[..., Any], *args: Any) -> Any:
        """Call ``method`` and wait for its answer."""
        import ray

        return ray.get(self._send(method, *args))

    # --- the workers' calls
    def worker_started(
        self, rank: int, actor_id: str | None, group: str | None = None, world_size: int | None = None
    ) -> int:
        return cast(int, self._ask(RunLedger.worker_started, rank, actor_id, group, world_size))

    def open_channel(self) -> Address | None:
        return cast("Address | None", self._ask(RunLedger.open_channel))

    def send_record(self, record: Record, validation: tuple[Any, Any] | None = None) -> None:
        """A report's record, without waiting (the channel's fallback, and validations)."""
        self._send(RunLedger.record, record, validation)

    def stored_through(self, attempt: int, rank: int, wanted: int = 0, timeout_s: float = 0.0) -> int:
        return cast(int, self._ask(RunLedger.stored_through, attempt, rank, wanted, timeout_s))

    def ask_stored_through(self, attempt: int, rank: int) -> Any:
        """:meth:`stored_through` without waiting: its ``ObjectRef``."""
        return self._send(RunLedger.stored_through, attempt, rank)

    def vote_free_round(self, attempt: int, index: int, rank: int, free: bool) -> bool:
        """A rank whose report is free of checkpoints waits for the round's decision; one
        with a checkpoint votes and goes on (its round is not free). (A worker with the record
        channel votes on it: compat_core.run.worker.)"""
        import ray

        vote = self._send(RunLedger.vote_free_round, attempt, index, rank, free, free)
        return bool(ray.get(vote)) if free else False

    def settle_free_round(self, attempt: int, index: int, rank: int) -> bool:
        return cast(bool, self._ask(RunLedger.settle_free_round, attempt, index, rank))

    def next_checkpoint_index(self, attempt: int) -> int:
        return cast(int, self._ask(RunLedger.next_checkpoint_index, attempt))

    def reported_checkpoints(
        self, attempt: int, rank: int, sent: int, validated: bool, timeout_s: float | None
    ) -> list[tuple[Any, dict[str, Any], CheckpointStatus]]:
        return cast(list[Any], self._ask(RunLedger.reported_checkpoints, attempt, rank, sent, validated, timeout_s))

    def store_seed_validation(self, token: str, seed: Any) -> None:
        self._ask(RunLedger.store_seed_validation, token, seed)

    def seed_validation(self, token: str) -> Any:
        return self._ask(RunLedger.seed_validation, token)

    def worker_done(
        self, rank: int, return_value: Any, usages: list[Usage], error: BaseException | None, attempt: int, sent: int
    ) -> None:
        self._ask(RunLedger.worker_done, rank, return_value, usages, error, attempt, sent)

    # --- the driver's calls
    def use_validation_config(self, config: Any) -> None:
        self._ask(RunLedger.use_validation_config, config)

    def engine_failed(self, errors: dict[int, BaseException]) -> None:
        self._ask(RunLedger.engine_failed, errors)

    def actor_died(self, actor_id: str | None, pickled_error: bytes) -> None:
        self._ask(RunLedger.actor_died, actor_id, pickled_error)

    def delivered_since(
        self, consumer: str, count: int, flush: bool = False, wait_s: float = 0.0
    ) -> list[DeliveredRound]:
        return cast(list[DeliveredRound], self._ask(RunLedger.delivered_since, consumer, count, flush, wait_s))

    def usages(self, timeout_s: float) -> list[Usage]:
        """What the workers relied on so far; raises ``GetTimeoutError`` after ``timeout_s``."""
        import ray

        return cast("list[Usage]", ray.get(self._send(RunLedger.usages), timeout=timeout_s))

    def keep_usages_with(self, sink: Callable[[list[Usage]], None]) -> None:
        self._ask(RunLedger.keep_usages_with, sink)

    def wake_consumers(self) -> None:
        """Without waiting."""
        self._send(RunLedger.wake_consumers)

    def send_callback_failure(self, failure: CallbackFailure) -> None:
        """A Tune callback's failure, for the run's result, without waiting."""
        self._send(RunLedger.callback_failed, failure)

    def close(self) -> LedgerSnapshot:
        """Everything the run's ledger recorded; the run leaves the host. The records stay in the
        run's journal, on this node, which the snapshot owns from now on. A host that died (its process
        killed, out of memory) leaves its journal: the snapshot is rebuilt from it, with
        ``host_lost`` saying so."""
        import ray
        from ray.exceptions import RayActorError

        try:
            snapshot: LedgerSnapshot = ray.get(self.actor.close_run.remote(self.run_id))
        except RayActorError as exc:
            if self.journal_path is None or not os.path.exists(self.journal_path):
                raise
            lost = (
                f"{type(exc).__name__}: compat's run ledger (LedgerHost, pid {self.pid} at first) died during the "
                f"run and was restarted as often as allowed ({MAX_RESTARTS_ENV_VAR}={self.max_restarts})"
            )
            snapshot = recover(self.journal_path, self.world_size, lost)
        snapshot.keep_journal()  # the driver's now: the records are read from it, one at a time
        return snapshot


class _Host:
    """This process's host: the actor, the Ray job it belongs to, and the calls it runs at once."""

    actor: Any = None
    max_restarts = MAX_RESTARTS
    job: str | None = None
    concurrency = 0
    pruned = False
    env: dict[str, str] | None = None


_host = _Host()
_host_lock = threading.Lock()


def open_ledger(world_size: int, **run_options: Any) -> LedgerClient:
    """A new run in this process's ledger host (started when needed); ``run_options`` are
    :class:`RunLedger`'s."""
    import ray

    needed = ledger_concurrency(world_size)
    restarts = max_restarts()
    journals = journal_dir()  # checked before anything is written there
    env = storage_env()
    with _host_lock:
        job = ray.get_runtime_context().get_job_id()
        if (
            _host.actor is None
            or _host.job != job
            or _host.concurrency < needed
            or _host.max_restarts != restarts
            or _host.env != env
            or not _reusable(_host.actor)
        ):
            index = os.path.join(journals, f"{uuid.uuid4().hex}.runs")  # the host is on this node
            actor_class = ray.remote(num_cpus=0, max_restarts=restarts, max_task_retries=-1)(LedgerHost)
            options: dict[str, Any] = {"max_concurrency": needed, "scheduling_strategy": _on_this_node()}
            if env:
                options["runtime_env"] = {"env_vars": env}
            _host.actor = actor_class.options(**options).remote(index)
            _host.job, _host.concurrency, _host.max_restarts, _host.env = job, needed, restarts, env
        actor = _host.actor
    run_id = uuid.uuid4().hex
    if not _host.pruned:  # once per driver process: journals of drivers that died long ago
        _host.pruned = True
        journal.prune(journals, JOURNAL_MAX_AGE_S, time.time())
    journal_path = os.path.join(journals, f"{run_id}{journal.JOURNAL_SUFFIX}")  # the host is on this node
    run_options = {**run_options, "journal_path": journal_path}
    pid = ray.get(actor.open_run.remote(run_id, world_size, run_options))  # before any worker calls it
    vote_timeout = run_options.get("vote_timeout_s") or VOTE_TIMEOUT_S
    return LedgerClient(actor, run_id, pid, journal_path, world_size, restarts, vote_timeout)


def storage_env() -> dict[str, str]:
    """The driver's variables its runs' storage reads (object-store credentials), as V1's engine
    hands them to its trial: the host writes V1's logs and the validation outcomes there, in a
    process of its own, which does not see what the driver set after Ray started."""
    return {name: os.environ[name] for name in adapters.v1_trial_credentials() if name in os.environ}


def journal_dir() -> str:
    """Where this process's runs keep their journals: :data:`JOURNAL_DIR` when set (tests), else
    ``journals`` in the user's private state directory (refused when another user could write
    to it: :class:`compat_core.errors.UnsafeStateDirectoryError`)."""
    return private.state_dir("journals", JOURNAL_DIR)


def _on_this_node() -> Any:
    """The host lives on the driver's node: a worker node that goes away (preempted, removed)
    must not take the run's records with it; the driver's node going away ends the run anyway.
    Not ``soft``: Ray 2.60 placed a soft-pinned actor of no resources on another node (measured
    on a ``Cluster`` of four nodes); it needs no resources, so the driver's node always fits it."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)


def _reusable(actor: Any) -> bool:
    """Whether the host ``actor`` can take a new run: alive, never restarted. A restarted one
    with no run left is ended here (one with runs ends with the driver)."""
    import ray

    try:
        if ray.get(actor.reusable.remote(), timeout=30):
            return True
        if ray.get(actor.runs_open.remote(), timeout=30) == 0:
            ray.kill(actor)
    except Exception:  # died (RayActorError), or unreachable
        pass
    return False


def _reconstructed() -> bool:
    """Whether this process is a Ray actor that Ray restarted (False outside Ray)."""
    try:
        import ray

        if not ray.is_initialized():  # a host built in a plain process (tests): starting Ray is not its job
            return False
        with warnings.catch_warnings():
            # Ray's property reads its own deprecated ``actor_id`` (a RayDeprecationWarning in
            # every run's output that raw Ray's runs do not print): not the user's to see.
            warnings.simplefilter("ignore", DeprecationWarning)
            return bool(ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception:
        return False
