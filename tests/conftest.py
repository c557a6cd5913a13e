"""Shared fixtures: one local Ray cluster per test session, backends selected per test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Raw Ray's V2 runs (the oracle of many tests, the modules graduated to ray.train) poll their
# workers every 0.1 s here, not every 2 s (Ray's default; compat's own v2 runs use 0.05 s unless
# the variable is set, docs/environment_variables.md): each report round of a V2 run waits for a
# poll, and at 2 s the graduation test's V2 runs left half the CPU idle. What a run observes does
# not depend on it. Set before the session's cluster starts, so its processes inherit it; a value
# other than compat's own keeps compat's default visible (test_runs.py's poll test).
os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the cases scripts/test.sh runs in only one of its two passes.

    ``v1_case``: the v1 cases of the one_pass tests that run a backend. The second pass
    (``-m "not one_pass or v1_case"``) runs them again, with the v1 backend on Ray's V2 engine.
    ``v2_case``: the v2 cases of the other real-Ray tests that run a backend (through the ``backend``
    or ``v2`` fixture, or a ``setting`` parameter), which both passes would run. The
    first pass (``-m "not v2_case"``) leaves them to the second, whose process starts with
    ``RAY_TRAIN_V2_ENABLED=1`` as a V2 user's does; a v2 fit in a process started under V1 is
    still run, by the one_pass tests' v2 cases and tests/compat_core/test_switch.py.
    test_v1_engine.py picks its engines itself.

    ``extended_cases(*ids)`` on a test marks ``extended`` those of its cases whose id starts with
    one of ``ids`` (a case the backend fixture makes cannot carry a mark of its own). ``extended``
    and ``extended_rerun`` are the full suite's (README.md, "The CI suite and the full suite"):
    CI's second pass leaves out a test marked ``extended_rerun``, except its v2 cases (``v2_case``),
    which run in no other pass."""
    for item in items:
        params = getattr(item, "callspec", None)
        cases = item.get_closest_marker("extended_cases")
        if cases is not None and params is not None and params.id.startswith(tuple(cases.args)):
            item.add_marker(pytest.mark.extended)
        if item.path.name == "test_v1_engine.py":
            continue
        given = params.params if params is not None else {}
        backend = given.get("backend", given.get("rich_run"))
        if "v2" in getattr(item, "fixturenames", ()):  # the v2 fixture: a v2 case of its own
            backend = "v2"
        setting = given.get("setting")
        if item.get_closest_marker("one_pass") is not None:
            if backend == "v1" or setting == "0":
                item.add_marker(pytest.mark.v1_case)
        elif (backend == "v2" or setting == "1") and item.get_closest_marker("ray") is not None:
            item.add_marker(pytest.mark.v2_case)


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


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An S3-compatible server on loopback (moto's server mode), and the AWS variables that point
    pyarrow's S3 filesystem at it, as a team points it at their own endpoint."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
    }.items():
        monkeypatch.setenv(name, value)
    yield
    server.stop()
