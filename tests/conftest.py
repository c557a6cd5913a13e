"""Shared fixtures: one local Ray cluster per test session, backends selected per test."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``v1_case`` the v1 cases of the one_pass tests that run a backend: the second pass
    of scripts/test.sh (``-m "not one_pass or v1_case"``) runs them again, with the v1 backend
    on Ray's V2 engine. test_v1_engine.py picks its engines itself."""
    for item in items:
        params = getattr(item, "callspec", None)
        if params is None or item.get_closest_marker("one_pass") is None or item.path.name == "test_v1_engine.py":
            continue
        if params.params.get("backend") == "v1" or params.params.get("setting") == "0":
            item.add_marker(pytest.mark.v1_case)


@pytest.fixture(scope="session")
def ray_cluster(compat_ray_cluster: None) -> None:
    """One local Ray cluster for every real-Ray test (compat.testing's plugin fixture)."""


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
