"""Shared fixtures: one local Ray cluster per test session, backends selected per test."""

from __future__ import annotations

import os

import pytest


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
