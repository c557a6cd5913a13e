"""The Ray actor that hosts run ledgers, and the handle a run's ledger is called through.

A driver process keeps one host across its fits: a fit opens a run in it (a round trip)
instead of starting a Python process of its own, which cost every fit 0.6-2.2 s
(docs/performance.md). The host is started at the first fit, and again when it died (a user
callback may take its process down) or the process connected to another Ray cluster; a fit
that needs more threads than it has gets a larger one. It asks for no CPU.

Workers and the driver call a run's ledger through its :class:`LedgerHandle` exactly as
they would call an actor of its own: ``ledger.record.remote(record)``.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

from compat_core import releases
from compat_core.ledger.records import LedgerSnapshot
from compat_core.ledger.run import RunLedger

# Threads a host starts with: a run needs one per rank waiting in the free-round vote, next
# to records, validations and the driver's calls (ledger_concurrency).
MIN_THREADS = 32


def ledger_concurrency(world_size: int) -> int:
    """Threads one run needs: every rank may wait in ``vote_free_round`` at once, next to
    records, validations and the driver's calls."""
    return world_size + 8


class LedgerHost:
    """Run ledgers by run id, in one process."""

    def __init__(self) -> None:
        # This process unpickles what workers of either engine send (validation requests,
        # V2's errors): V2's classes must resolve even where ray.train was imported with V2
        # off. Done before any run's arguments arrive.
        releases.expose_v2_names()
        self._runs: dict[str, RunLedger] = {}
        self._lock = threading.Lock()

    def open_run(self, run_id: str, world_size: int, options: dict[str, Any]) -> int:
        with self._lock:
            self._runs[run_id] = RunLedger(world_size, **options)
        return os.getpid()

    def call(self, run_id: str, method: str, *args: Any) -> Any:
        with self._lock:
            ledger = self._runs[run_id]
        return getattr(ledger, method)(*args)

    def close_run(self, run_id: str) -> LedgerSnapshot:
        """The run's snapshot, once its pending validations finished (they may still call
        the run: a validation of the older form fetches its function from it); then the run
        leaves the host."""
        with self._lock:
            ledger = self._runs[run_id]
        snapshot = ledger.close()
        with self._lock:
            del self._runs[run_id]
        return snapshot

    def alive(self) -> bool:
        return True


class _Method:
    def __init__(self, actor: Any, run_id: str, name: str) -> None:
        self._actor, self._run_id, self._name = actor, run_id, name

    def remote(self, *args: Any) -> Any:
        return self._actor.call.remote(self._run_id, self._name, *args)


class LedgerHandle:
    """One run's ledger in a host: picklable, shipped to the workers with the training function."""

    def __init__(self, actor: Any, run_id: str, pid: int) -> None:
        self.actor = actor
        self.run_id = run_id
        self.pid = pid  # the host's process

    def __getattr__(self, name: str) -> _Method:
        if name.startswith("_"):  # pickling and copying probe for dunder methods
            raise AttributeError(name)
        return _Method(self.__dict__["actor"], self.__dict__["run_id"], name)

    def close(self) -> LedgerSnapshot:
        """Everything the run's ledger recorded; the run leaves the host."""
        import ray

        snapshot: LedgerSnapshot = ray.get(self.actor.close_run.remote(self.run_id))
        return snapshot


class _Host:
    """This process's host: the actor, the Ray job it belongs to, and its threads."""

    actor: Any = None
    job: str | None = None
    threads = 0


_host = _Host()
_host_lock = threading.Lock()


def open_ledger(world_size: int, **options: Any) -> LedgerHandle:
    """A new run in this process's ledger host (started when needed); ``options`` are
    :class:`RunLedger`'s."""
    import ray

    needed = ledger_concurrency(world_size)
    with _host_lock:
        job = ray.get_runtime_context().get_job_id()
        if _host.actor is None or _host.job != job or _host.threads < needed or not _alive(_host.actor):
            threads = max(MIN_THREADS, needed)
            actor_class = ray.remote(num_cpus=0)(LedgerHost)
            _host.actor = actor_class.options(max_concurrency=threads, scheduling_strategy=_on_this_node()).remote()
            _host.job, _host.threads = job, threads
        actor = _host.actor
    run_id = uuid.uuid4().hex
    pid = ray.get(actor.open_run.remote(run_id, world_size, options))  # before any worker calls it
    return LedgerHandle(actor, run_id, pid)


def _on_this_node() -> Any:
    """The host lives on the driver's node: a worker node that goes away (preempted, removed)
    must not take the run's records with it; the driver's node going away ends the run anyway.
    Not ``soft``: Ray 2.60 placed a soft-pinned actor of no resources on another node (measured
    on a ``Cluster`` of four nodes); it needs no resources, so the driver's node always fits it."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)


def _alive(actor: Any) -> bool:
    import ray

    try:
        return bool(ray.get(actor.alive.remote(), timeout=30))
    except Exception:  # died (RayActorError), or unreachable
        return False
