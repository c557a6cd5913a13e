"""What runs inside each training worker around the user's training function."""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compat import _switch, _usage
from compat._checks import ALLOW_NON_FINITE_ENV_VAR

# Environment the driver decided on, applied in every worker so both sides agree.
_PROPAGATED = (_switch.ENV_VAR, _usage.STRICT_ENV_VAR, ALLOW_NON_FINITE_ENV_VAR)


@dataclass
class WorkerSettings:
    """Decided on the driver at ``fit()`` and shipped with the training function."""

    backend: _switch.Backend
    ledger: Any
    env: dict[str, str]
    has_validation_config: bool
    keep_v1_logs: bool


@dataclass
class WorkerSession:
    settings: WorkerSettings
    rank: int
    world_size: int
    next_index: int = 0

    @property
    def backend(self) -> _switch.Backend:
        return self.settings.backend


_session: WorkerSession | None = None


def current() -> WorkerSession | None:
    return _session


def driver_settings(
    backend: _switch.Backend, ledger: Any, *, has_validation_config: bool, keep_v1_logs: bool
) -> WorkerSettings:
    env = {name: os.environ[name] for name in _PROPAGATED if name in os.environ}
    env[_switch.ENV_VAR] = _switch.env_value(backend)
    return WorkerSettings(backend, ledger, env, has_validation_config, keep_v1_logs)


def _rank_and_size(backend: _switch.Backend) -> tuple[int, int]:
    if backend == "v2":
        from ray.train.v2.api.train_fn_utils import get_context as v2_context

        context: Any = v2_context()
    else:
        from ray.train.context import get_context as v1_context

        context = v1_context()
    return context.get_world_rank(), context.get_world_size()


def _run(user_fn: Callable[..., Any], settings: WorkerSettings, args: tuple[Any, ...]) -> Any:
    global _session
    os.environ.update(settings.env)
    rank, size = _rank_and_size(settings.backend)
    _session = WorkerSession(settings, rank, size)
    _usage.take()
    error: BaseException | None = None
    value: Any = None
    try:
        value = user_fn(*args)
        return value
    except BaseException as exc:
        error = exc
        raise
    finally:
        import ray

        _session = None
        returned = value if rank == 0 else None
        usages = _usage.take()
        try:
            # Blocking: every earlier record from this worker is in before fit() returns.
            ray.get(settings.ledger.worker_done.remote(rank, returned, usages, error))
        except Exception:
            # An unpicklable return value or exception must not hide the run's outcome.
            plain = RuntimeError(f"{type(error).__name__}: {error}") if error else None
            ray.get(settings.ledger.worker_done.remote(rank, None, usages, plain))


class _Entry:
    """The training function Ray runs. A module-level class, so that it is pickled by
    reference and ``_session`` is set in this module, not in a by-value copy of it."""

    def __init__(self, user_fn: Callable[..., Any], settings: WorkerSettings) -> None:
        self.user_fn = user_fn
        self.settings = settings
        self.__name__ = getattr(user_fn, "__name__", "train_fn_per_worker")


class _EntryWithConfig(_Entry):
    def __call__(self, config: Any) -> Any:
        return _run(self.user_fn, self.settings, (config,))


class _EntryWithoutConfig(_Entry):
    def __call__(self) -> Any:
        return _run(self.user_fn, self.settings, ())


def wrap(user_fn: Callable[..., Any], settings: WorkerSettings) -> Callable[..., Any]:
    """Wrap ``user_fn`` so each worker sets up compat, runs it, and reports back."""
    takes_config = len(inspect.signature(user_fn).parameters) >= 1
    entry = _EntryWithConfig if takes_config else _EntryWithoutConfig
    return entry(user_fn, settings)


def now() -> float:
    return time.time()
