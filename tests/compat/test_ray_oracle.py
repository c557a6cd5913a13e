"""The same small programs with raw ``ray.train`` and with compat, in each setting: what each
observes (values; exception class and message's first line) is the same
(``oracle_probe.py``: configs, results, errors and trainers as a program builds them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat_core import installed
from compat_core.releases import facts

PROBE = Path(__file__).with_name("oracle_probe.py")

pytestmark = [
    pytest.mark.one_pass,  # both settings, each in a fresh interpreter
    # compat gives every release the newest Ray's behaviour (nested metric names, validated
    # configs, its error messages): an older Ray is no oracle for it (docs/compatibility.md §27).
    pytest.mark.skipif(facts.VERSION < installed.NEWEST_TESTED, reason="the oracle is the newest Ray compat supports"),
]


def observed(setting: str) -> dict[str, Any]:
    env = {**os.environ, "RAY_TRAIN_V2_ENABLED": setting}
    out = subprocess.run([sys.executable, str(PROBE)], env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    found: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("setting", ["0", "1"])
def test_every_program_observes_with_compat_what_it_observes_with_ray(setting: str) -> None:
    found = observed(setting)
    assert len(found) >= 10
    differ = {name: seen for name, seen in found.items() if seen["ray"] != seen["compat"]}
    assert differ == {}
