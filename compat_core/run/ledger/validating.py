"""Asynchronous checkpoint validation run by the ledger (V1 semantics, and V2 before Ray
2.56), one at a time in the order the checkpoints were persisted, each as a Ray task as V2's
controller runs it; and the functions of ``report(validate_fn=...)`` waiting for it."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from compat_core import messages, settings, switch
from compat_core.errors import InvalidSwitchValueError
from compat_core.integration.validation import kwargs_and_timeout
from compat_core.releases import facts
from compat_core.run.ledger.store import RecordStore
from compat_core.semantics.records import RoundKey
from compat_core.semantics.rounds import CheckpointStatus, ValidationOutcome

# Runs one validation: (fn, checkpoint, kwargs, remote_kwargs, timeout_s) -> outcome.
ValidationRunner = Callable[[Callable[..., Any], Any, dict[str, Any], dict[str, Any], float | None], ValidationOutcome]
_Job = tuple[RoundKey, Callable[..., Any], Any, dict[str, Any], dict[str, Any], float | None]


class Validations:
    """Runs each requested validation on a thread of its own, outcomes into the store."""

    def __init__(self, store: RecordStore, runner: ValidationRunner | None) -> None:
        self._store = store
        self._runner = runner
        self._config: Any = None
        self._seeds: dict[str, Any] = {}
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def use_config(self, config: Any) -> None:
        """The trainer's validation config (it holds the ledger's handle, so comes later)."""
        self._config = config

    def store_seed(self, token: str, seed: Any) -> None:
        with self._lock:
            self._seeds[token] = seed

    def seed(self, token: str) -> Any:
        with self._lock:
            return self._seeds[token]

    def request(self, key: RoundKey, checkpoint: Any, request: Any) -> None:
        if self._runner is None or self._config is None:
            raise RuntimeError("this ledger was created without validation support")
        config = self._config
        kwargs, timeout_s = kwargs_and_timeout(config, request)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="compat-validations", daemon=True)
                self._thread.start()
        self._queue.put((key, config.fn, checkpoint, kwargs, dict(config.ray_remote_kwargs), timeout_s))

    def close(self) -> None:
        """Wait for the validations requested so far."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _loop(self) -> None:
        assert self._runner is not None
        while True:
            job = self._queue.get()
            if job is None:
                return
            key, fn, checkpoint, kwargs, remote_kwargs, timeout_s = job
            self._store.add_validation(key, self._runner(fn, checkpoint, kwargs, remote_kwargs, timeout_s))


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

    ``switch_value``: the ``RAY_TRAIN_V2_ENABLED`` the task must see (the mode's, from
    :attr:`compat_core.switch.Mode.outside_training_env`), whatever the cluster was started with."""
    import ray

    options = task_options(remote_kwargs, switch_value, settings.V2_ENABLED.raw())
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
            f"{type(exc).__name__}: {exc}", device_needs_worker=facts.V2_DEVICE_NEEDS_WORKER and switch_value == "1"
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


def _reads_as(value: str | None) -> switch.Generation | None:
    try:
        return switch.parse(value)
    except InvalidSwitchValueError:
        return None  # not a value compat accepts: set the one it means


def _run_validation(fn: Callable[..., Any], checkpoint: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = fn(checkpoint, **kwargs)
    return result
