"""Graduation file by file: a project of five modules (a shared config module, the trainer's
module, a callbacks module, a Tune sweep and a module reading results, ``graduation/v1_era``)
is taken onto compat with ``python -m migrate --target compat``, then moved back onto
``ray.train`` one module at a time with ``--target native``, as a team does after the flip. After
every step the project runs, half on compat and half on Ray, and observes what the same project
fully on raw Ray observes: under V1, the V1-era original; under V2, the fully graduated project
(compat never imported).

Under V2 two modules need a hand fix before the trainer's module can graduate, and the codemod
cannot see either (the trainer and its callback are built in other modules than the Tuner and the
RunConfig that take them): the callback is a Ray Tune callback (RTM106: V2's RunConfig takes only
``UserCallback``) and the sweep passes the trainer to a Tuner (RTM117: V2's trainers are not Tune
trainables). compat's run names both, as V1-only behaviours, while the project is on compat:
that is the team's cue, and the hand fixes (``graduation/hand_fixed``) follow each rule's "Use
instead". Under V1 those two modules are already what raw V1 runs, so their steps change nothing.

Before Ray 2.52, V2's ``Result.from_path`` raises ``NotImplementedError`` (compat's reads the run):
there, under V2, the module reading results stays on compat, as docs/compatibility.md §27 advises,
and the oracle is the project with every other module on Ray.

One Ray cluster per setting (3 CPUs: raw V1's trial reserves one for its trainer); each state is
a job of its own on it (``python job.py`` from the state's directory, as the team runs it, so the
workers import the state's modules).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compat_core.releases import facts
from tests.compat.clusters import script_lines
from tests.suite import FULL

pytestmark = [pytest.mark.ray, pytest.mark.one_pass]

HERE = Path(__file__).resolve().parent / "graduation"
ROOT = HERE.parents[2]
# The order the modules graduate in: under V2 the callbacks and the sweep before the trainer's
# module (its raw trainer refuses a Tune callback and is not a Tune trainable).
ORDER = ("callbacks", "sweep", "settings", "report", "training")
# Under V2, what stays on compat on the installed Ray (above).
KEPT_ON_COMPAT = () if facts.V2_READS_RUNS else ("report",)

HOST = """
import json, os, subprocess, sys
import ray

ray.init(num_cpus=3, include_dashboard=False, address="local")
env = dict(os.environ, RAY_ADDRESS=ray.get_runtime_context().gcs_address)
for spec in sys.argv[1:]:
    label, directory, storage = spec.split("|")
    out = subprocess.run(
        [sys.executable, "job.py", storage], cwd=directory, env=env, capture_output=True, text=True, timeout=600
    )
    observed = [line.removeprefix("OBSERVED ") for line in out.stdout.splitlines() if line.startswith("OBSERVED ")]
    print("STATE " + json.dumps({
        "label": label, "observed": json.loads(observed[-1]) if observed else None, "stderr": out.stderr,
    }), flush=True)
ray.shutdown()
"""


def _migrate(target: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", "--target", target, "--isolated", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def _states(setting: str, tmp_path: Path) -> tuple[list[tuple[str, Path]], set[str]]:
    """The project's states, first all on compat, then one more module graduated each step
    (a step that changes no file is not a state of its own); and the codes the codemod flagged."""
    previous = tmp_path / "0-compat"
    shutil.copytree(HERE / "v1_era", previous)
    onto_compat = _migrate("compat", previous)
    assert onto_compat.returncode in (0, 1), onto_compat.stdout + onto_compat.stderr
    states, flagged = [("compat", previous)], set()
    order = [module for module in ORDER if setting == "0" or module not in KEPT_ON_COMPAT]
    for step, module in enumerate(order, start=1):
        state = tmp_path / f"{step}-{module}"
        shutil.copytree(previous, state)
        graduated = _migrate("native", state / f"{module}.py")
        assert graduated.returncode in (0, 1), graduated.stdout + graduated.stderr
        flagged |= {word for word in graduated.stdout.split() if word.startswith("RTM")}
        hand_fixed = HERE / "hand_fixed" / f"{module}.py"
        if setting == "1" and hand_fixed.exists():
            shutil.copy(hand_fixed, state / f"{module}.py")
        text = (state / f"{module}.py").read_text()
        assert "compat" not in text.split('"""', 2)[2], text  # the module is on ray.train now
        if all((state / f"{m}.py").read_text() == (previous / f"{m}.py").read_text() for m in ORDER):
            shutil.rmtree(state)
            continue
        states.append((module, state))
        previous = state
    return states, flagged


def _run(setting: str, states: list[tuple[str, Path]], tmp_path: Path) -> dict[str, dict]:
    specs = [f"{label}|{path}|{tmp_path / 'storage' / label}" for label, path in states]
    found = script_lines(HOST, "STATE", specs, {"RAY_TRAIN_V2_ENABLED": setting}, timeout_s=1800, count=len(states))
    return {state.pop("label"): state for state in found}


@pytest.mark.parametrize("mode", ["0", "1"])  # not `setting`: once, in CI's first pass (see conftest)
# CI: V2's (a team graduates after the flip); under V1, test_v1_era_programs.py runs a V1-era program
# taken onto compat against raw V1. Each state is a fit and a sweep of two trials (1.5 min under V2).
@pytest.mark.extended_cases("0")
def test_a_project_graduating_one_module_at_a_time_observes_what_raw_ray_observes(mode: str, tmp_path: Path) -> None:
    setting = mode
    states, flagged = _states(setting, tmp_path)
    # The codemod flags only the read of metrics_dataframe (RTM102: V2 changes its meaning; in
    # the module reading results, unless it stays on compat); the callback and the sweep it
    # cannot see from their modules (above).
    assert flagged == ({"RTM102"} if setting == "0" or "report" not in KEPT_ON_COMPAT else set()), flagged
    if setting == "0":  # the oracle: the V1-era original on raw V1
        oracle = ("raw", tmp_path / "raw")
        shutil.copytree(HERE / "v1_era", oracle[1])
        assert [label for label, _ in states] == ["compat", "settings", "report", "training"]
    else:  # the oracle: the fully graduated project on raw V2 (but KEPT_ON_COMPAT), its last state
        oracle = states.pop()
        graduated = [module for module in ("callbacks", "sweep", "settings", "report") if module not in KEPT_ON_COMPAT]
        assert [label for label, _ in states] == ["compat", *graduated]
        assert oracle[0] == "training"
    if not FULL:  # the CI suite: the middle state (half on compat, half on Ray) beside the oracle
        states = [states[len(states) // 2]]
    results = _run(setting, [oracle, *states], tmp_path)
    expected = results.pop(oracle[0])
    assert expected["observed"] is not None, expected["stderr"][-6000:]
    for label, state in results.items():
        assert state["observed"] == expected["observed"], (label, state["stderr"][-6000:])
    fit = expected["observed"]["fit"]
    if setting == "0":  # V1: every report a row and a callback's result
        assert fit["rows"] == [0, 1, 2] and [line["epoch"] for line in fit["logged"]] == [0, 1, 2]
    else:  # V2: a row per kept checkpoint, every report to the callback
        assert fit["rows"] == [1, 2] and [line["epoch"] for line in fit["logged"]] == [0, 1, 2]
    assert fit["kept"] == [1, 2] and fit["saved"] == ["model.pt"]
    assert len(expected["observed"]["sweep"]["final_loss"]) == 2
    # On compat, the run named the two V1-only behaviours the trainer's module cannot graduate
    # with (under V2 each a warning at the line; under V1 counted, not warned). CI: test_tune.py's
    # and test_every_report.py's warnings of each.
    if "compat" in results:
        on_compat = results["compat"]["stderr"]
        for kind in ("tune-callback", "tuner-with-trainer"):
            assert (f"[{kind}]" in on_compat) == (setting == "1"), (kind, on_compat[-6000:])
