"""The day Ray deletes Train V1, rehearsed on the installed Ray (tests/deletion/sitecustomize.py,
docs/compatibility.md §34): Ray answering V2 whatever ``RAY_TRAIN_V2_ENABLED`` says (or refusing
``=0``), V1's engine entry points raising when called and ``ray.air.session`` gone, in the driver
and every Ray process. With ``COMPAT_V1_ENGINE`` unset, compat finds out by itself and a V1-era
job migrated onto it keeps V1's results; raw V1 fails there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compat import deletion_day_job

ROOT = Path(__file__).resolve().parents[2]
REHEARSAL = ROOT / "tests" / "deletion"

pytestmark = pytest.mark.one_pass  # each process sets its own variables


def _env(variant: str | None, setting: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "COMPAT_V1_ENGINE", "RAY_TRAIN_V2_ENABLED")}
    env["PYTHONPATH"] = os.pathsep.join([str(REHEARSAL), str(ROOT)] if variant else [str(ROOT)])
    env.pop("COMPAT_REHEARSE_NO_V1", None)
    if variant:
        env["COMPAT_REHEARSE_NO_V1"] = variant
    if setting is not None:
        env["RAY_TRAIN_V2_ENABLED"] = setting
    return env


PROBE = """
import json, os
import compat
from compat_core import switch
from compat_core.releases import adapters
import ray.train.constants  # a module of Ray's train package, as a program imports one
seen = [os.environ.get(name) for name in ("RAY_TRAIN_V2_ENABLED", "COMPAT_RAY_TRAIN_V2_ENABLED")]
# compat's errors are Ray's classes there too (made after Ray was handed a value it takes).
ray_class = issubclass(compat.TrainingFailedError, ray.train.TrainingFailedError) and ray.train.constants.__name__
print(json.dumps([adapters.has_v1_engine(), str(switch.mode_of(switch.V1)), str(switch.mode()), seen, ray_class]))
"""


V1_ON_V1, V1_ON_V2, V2 = "v1 on Ray's V1 engine", "v1 on Ray's V2 engine", "v2 on Ray's V2 engine"
CONSTANTS = "ray.train.constants"


@pytest.mark.parametrize(
    ("variant", "setting", "finds"),
    [
        (None, "0", [True, V1_ON_V1, V1_ON_V1, ["0", None], CONSTANTS]),  # the installed Ray, as it is
        ("answers-v2", "0", [False, V1_ON_V2, V1_ON_V2, ["0", None], CONSTANTS]),
        ("refuses", None, [False, V1_ON_V2, V2, [None, None], CONSTANTS]),  # a V2 program leaves it unset
        # V1 selected where Ray refuses the value: compat keeps it, Ray (and its processes) get 1.
        ("refuses", "0", [False, V1_ON_V2, V1_ON_V2, ["1", "0"], CONSTANTS]),
    ],
    ids=["today", "Ray answers V2", "Ray refuses =0, unset", "Ray refuses =0, V1 selected"],
)
def test_compat_finds_by_itself_whether_ray_can_run_v1(variant: str | None, setting: str | None, finds) -> None:
    """Not by one module's presence (V1's BackendExecutor is still importable in both rehearsals,
    as RLlib's import of it may keep it): by whether Ray honours ``=0`` and ships V1's trainer."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=_env(variant, setting), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == finds


@pytest.mark.ray
def test_a_v1_era_job_keeps_v1s_results_on_the_day_ray_deletes_v1(ray_cluster, tmp_path, monkeypatch) -> None:
    """The same job (tests/compat/deletion_day_job.py: every report kept, compat.session, a retried
    run, TorchTrainer.restore, a Tune sweep of a compat trainer) the day before, on V1's engine, in
    this process; and on the day, in a process of its own whose Ray has no V1, reading the earlier
    day's run back with Result.from_path. ``COMPAT_V1_ENGINE`` is unset on both days."""
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0")
    monkeypatch.delenv("COMPAT_V1_ENGINE", raising=False)
    # CI: the job and a restore; the full suite: every part.
    parts = deletion_day_job.PARTS if os.environ.get("COMPAT_FULL_SUITE") else ("job", "restored")
    before = json.loads(json.dumps(deletion_day_job.main(str(tmp_path / "before"), parts=parts)))
    assert before["mode"] == "v1 on Ray's V1 engine"
    assert before["job"]["rows"] == 6 and before["job"]["progress_csv"]  # V1's: the free-floating reports kept
    assert (before["raw_v1_trainer"], before["ray_air_session"]) == ("constructed", "imported")

    job = [sys.executable, deletion_day_job.__file__, str(tmp_path / "after"), ",".join(parts), before["job_path"]]
    # Both ways a Ray without V1 may treat the variable: answering V2 for it, or refusing it
    # (compat keeps the selection and gives Ray 1). CI: the job and a restore in each.
    for variant in ("answers-v2", "refuses"):
        env = _env(variant, "0")
        done = subprocess.run(
            job[:2] + [f"{job[2]}-{variant}", *job[3:]],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-5000:]
        after = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULTS "))[8:])
        assert after["mode"] == "v1 on Ray's V2 engine", variant  # found by itself
        # The rehearsal is real: raw V1 fails there.
        assert after["raw_v1_trainer"] == "DeprecationWarning" and after["ray_air_session"] == "ModuleNotFoundError"
        # V1's results, part by part, and the earlier day's run read back as it was.
        assert after["earlier"] == {**before["job"], "path_kept": True}
        same = [k for k in before if k not in ("mode", "job_path", "raw_v1_trainer", "ray_air_session")]
        assert set(same) >= set(parts)
        assert {k: after[k] for k in same} == {k: before[k] for k in same}, variant


SEEDS = """
import json, os, sys
import compat
from examples import after_report_callback, async_validation, config_and_results, lightning_report_callback
from examples import torchmetrics_aggregation

storage = sys.argv[1]
V1_FILES = ("progress.csv", "result.json", "params.json")
runs = {
    "torchmetrics_aggregation": lambda: torchmetrics_aggregation.main(storage, num_epochs=2),
    "after_report_callback": lambda: after_report_callback.main(storage)[0],
    "async_validation": lambda: async_validation.main(storage, epochs=2),
    "config_and_results": lambda: config_and_results.main(storage),
    "lightning_report_callback": lambda: lightning_report_callback.main(storage, epochs=1),
}
from compat_core import switch
out = {"mode": str(switch.mode())}
for name, run in runs.items():
    result = run()
    frame = result.metrics_dataframe
    out[name] = {
        "backend": result.backend,
        "rows": None if frame is None else len(frame),
        "columns": None if frame is None else sorted(c for c in frame.columns if "/" not in c),
        "metric_keys": sorted(result.metrics or {}),
        "best": [os.path.basename(c.path) for c, _ in result.best_checkpoints],
        "statuses": [str(r.status) for r in result.reported_checkpoints],
        "v1_files": [n for n in V1_FILES if os.path.exists(os.path.join(result.path, n))],
    }
print("SEEDS " + json.dumps(out), flush=True)
"""


@pytest.mark.ray
@pytest.mark.extended  # the full suite's: CI rehearses with the job above
def test_the_seed_programs_keep_v1s_results_on_the_day_ray_deletes_v1(tmp_path) -> None:
    """The seed programs (examples/) with V1 semantics, the day before on V1's engine and on the
    day in both variants, each in a process of its own: the same rows, keys, checkpoints and V1
    files (``COMPAT_V1_ENGINE`` unset on both days)."""
    days = {}
    for variant in (None, "answers-v2", "refuses"):
        done = subprocess.run(
            [sys.executable, "-c", SEEDS, str(tmp_path / str(variant))],
            env=_env(variant, "0"),
            capture_output=True,
            text=True,
            timeout=1200,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-5000:]
        days[variant] = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("SEEDS "))[6:])
    before = days.pop(None)
    assert before.pop("mode") == V1_ON_V1
    for variant, after in days.items():
        assert after.pop("mode") == V1_ON_V2, variant
        assert after == before, variant
