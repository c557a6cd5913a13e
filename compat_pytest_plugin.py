"""pytest plugin of ray-train-compat (registered as ``compat_testing``).

Loaded by every ``pytest`` run in an environment where ray-train-compat is installed, so it
imports neither Ray nor compat: an unrelated project's tests pay nothing for it and do not
depend on the installed Ray. Ray and compat load only when a test uses a fixture.

Fixtures: ``compat_ray_cluster`` (one local Ray cluster per test session) and
``compat_run_both`` (run a training function under both backends; see docs/testing.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def compat_ray_cluster() -> Iterator[None]:
    """One local Ray cluster for the test session (reused if one is already connected).

    Ray workers import training functions by module name, so the test session's import
    paths are given to them through ``PYTHONPATH``.
    """
    import ray

    paths = [p for p in sys.path if p and os.path.isdir(p) and "site-packages" not in p]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=max(2, os.cpu_count() or 2), include_dashboard=False, log_to_driver=False)
    yield
    if started:
        ray.shutdown()


@pytest.fixture
def compat_run_both(compat_ray_cluster: None, tmp_path: Any) -> Callable[..., Any]:
    """``compat_run_both(train_func, **trainer_kwargs)`` -> :class:`compat.testing.Comparison`."""
    from compat.testing import run_both

    def run(train_func: Callable[..., Any], **kwargs: Any) -> Any:
        kwargs.setdefault("storage_path", str(tmp_path))
        return run_both(train_func, **kwargs)

    return run
