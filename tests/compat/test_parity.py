"""``import compat as train`` covers the installed Ray's whole public ``ray.train`` API, in
both settings: names, parameters, attributes (computed from Ray by ``parity_probe.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).with_name("parity_probe.py")

pytestmark = pytest.mark.one_pass  # both settings, each in a fresh interpreter


def probe(setting: str) -> dict[str, list[str]]:
    env = {**os.environ, "RAY_TRAIN_V2_ENABLED": setting}
    out = subprocess.run([sys.executable, str(PROBE)], env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    found: dict[str, list[str]] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("setting", ["0", "1"])
def test_compat_has_everything_the_installed_ray_train_has(setting: str) -> None:
    found = probe(setting)
    assert found["missing"] == [], "compat lacks what ray.train has:\n  " + "\n  ".join(found["missing"])
    stale = found["stale"]
    assert stale == [], f"reviewed exclusions compat now has (drop them from parity_probe.EXCLUDED): {stale}"
