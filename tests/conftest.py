"""Shared fixtures: one local Ray cluster per test session, backends selected per test."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """One local Ray cluster for every real-Ray test; shut down at the end."""
    import ray

    # Workers import training functions by module name: give them pytest's test paths.
    root = str(Path(__file__).resolve().parent.parent)
    paths = [p for p in sys.path if p.startswith(root)]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    started = False
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        started = True
    yield
    if started:
        ray.shutdown()


@pytest.fixture(params=["v1", "v2"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, ray_cluster: None) -> str:
    """Runs the test once per backend, on the shared cluster."""
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1" if request.param == "v2" else "0")
    return str(request.param)


@pytest.fixture
def v1(monkeypatch: pytest.MonkeyPatch, ray_cluster: None) -> None:
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0")


@pytest.fixture
def v2(monkeypatch: pytest.MonkeyPatch, ray_cluster: None) -> None:
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1")


@pytest.fixture
def storage(tmp_path: os.PathLike[str]) -> str:
    return str(tmp_path)
