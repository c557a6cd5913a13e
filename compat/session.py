"""The V1-style session functions, correct under both backends.

``ray.air.session.*`` is silently wrong inside V2 workers (rank 0 everywhere, reports
dropped). These answer correctly in both modes; each use is recorded as the V1-only
kind ``session-api``. Prefer ``compat.report`` and ``compat.get_context()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.train import Checkpoint

from compat import _api
from compat_core.integration.patch import rebind
from compat_core.migration import usage

__all__ = [
    "get_checkpoint",
    "get_dataset_shard",
    "get_experiment_name",
    "get_local_rank",
    "get_world_rank",
    "get_world_size",
    "report",
]


def _note(name: str) -> None:
    usage.relied_on("session-api", f"session.{name}")


def report(metrics: dict[str, Any], *, checkpoint: Checkpoint | None = None) -> None:
    _note("report")
    _api.report(metrics, checkpoint=checkpoint)


def get_checkpoint() -> Checkpoint | None:
    _note("get_checkpoint")
    return _api.get_checkpoint()


def get_dataset_shard(dataset_name: str | None = None) -> Any:
    _note("get_dataset_shard")
    return _api.get_dataset_shard(dataset_name)


def get_world_rank() -> int:
    _note("get_world_rank")
    return _api.get_context().get_world_rank()


def get_local_rank() -> int:
    _note("get_local_rank")
    return _api.get_context().get_local_rank()


def get_world_size() -> int:
    _note("get_world_size")
    return _api.get_context().get_world_size()


def get_experiment_name() -> str:
    _note("get_experiment_name")
    return _api.get_context().get_experiment_name()


def route_air_session() -> Callable[[], None]:
    """``ray.air.session.*`` inside a compat worker answers correctly in both modes (raw V2
    makes it a silent no-op) and is counted as the V1-only kind ``session-api``; returns the
    undo. The trainer hands it to every worker (compat_core.run.worker runs it). On a Ray
    without ``ray.air.session`` (V1's API, going with Train V1) no code can call it: nothing to
    route."""
    try:
        import ray.air.session as air_session
    except ImportError:
        return lambda: None
    return rebind(air_session, {name: globals()[name] for name in __all__})
