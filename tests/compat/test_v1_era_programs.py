"""The path a team takes: a V1-era program, written as Ray 2.7's docs wrote them (``ray.air``
configs and ``session``, a report every epoch, a checkpoint every other one with two kept by
score, no ``storage_path``), rewritten by ``python -m
migrate --target compat``, then run in both modes, and what the user reads from their ``Result``
compared with raw Ray in the same mode: under V1, the original program on raw Ray; under V2, the
same program rewritten by ``--target native`` (the end of the road) on raw Ray.

Each mode's runs share one process and Ray cluster (started with 3 CPUs: raw V1 reserves one for
its trainer actor), each run with Ray's default storage in a directory of its own.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compat.clusters import script_lines

pytestmark = [pytest.mark.ray, pytest.mark.one_pass]

HERE = Path(__file__).resolve().parent
PROGRAMS = ["torch_quickstart.py"]
USER_KEYS = ("loss", "epoch", "rank", "score")

RUNNER = """
import json, os, re, runpy, sys
import ray
import ray.train.constants

ray.init(num_cpus=3, include_dashboard=False, address="local")
for spec in sys.argv[1:]:
    label, path, storage = spec.split("|")
    ray.train.constants.DEFAULT_STORAGE_PATH = storage  # Ray's default, read when a run starts
    result = runpy.run_path(path, run_name="__main__")["result"]
    frame = result.metrics_dataframe
    columns = [c for c in ("epoch", "loss", "score", "training_iteration") if frame is not None and c in frame]
    print("RESULT " + json.dumps({
        "label": label,
        "metric_keys": None if result.metrics is None else sorted(result.metrics),
        "metrics": None if result.metrics is None else {
            k: v for k, v in result.metrics.items() if k in ("loss", "epoch", "rank", "score", "training_iteration")
        },
        "rows": None if frame is None else frame[columns].to_dict("list"),
        "best": sorted(m.get("epoch") for _, m in result.best_checkpoints or []),
        "checkpoint": None if result.checkpoint is None else os.path.basename(result.checkpoint.path),
        "path": os.path.relpath(result.path, storage),
        "error": None if result.error is None else repr(result.error),
    }), flush=True)
ray.shutdown()
"""


def _normalized(summary: dict) -> dict:
    """Run-specific names (dates, trial ids, timestamped checkpoint names) as patterns."""
    text = json.dumps(summary)
    text = re.sub(r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d(\.\d+)?", "<date>", text)
    text = re.sub(r"_[0-9a-f]{5}_00000", "_<id>_00000", text)
    return json.loads(text)


def _migrate(target: str, directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", "--target", target, str(directory)], capture_output=True, text=True
    )


def _run(setting: str, runs: list[tuple[str, Path]], tmp_path: Path) -> dict[str, dict]:
    specs = [f"{label}|{path}|{tmp_path / 'storage' / label}" for label, path in runs]
    found = script_lines(RUNNER, "RESULT", specs, {"RAY_TRAIN_V2_ENABLED": setting}, timeout_s=900, count=len(runs))
    return {summary.pop("label"): _normalized(summary) for summary in found}


@pytest.mark.parametrize("mode", ["0", "1"])  # not `setting`: once, in CI's first pass (see conftest)
# CI: V1's; under V2, test_graduation.py takes a V1-era project onto compat and runs it against raw V2.
@pytest.mark.extended_cases("1")
def test_v1_era_programs_migrated_onto_compat_give_what_raw_ray_gives(mode: str, tmp_path: Path) -> None:
    setting = mode
    original, compat_dir, native_dir = tmp_path / "original", tmp_path / "onto_compat", tmp_path / "native"
    for directory in (original, compat_dir, native_dir):
        directory.mkdir()
        for name in PROGRAMS:
            shutil.copy(HERE / "v1_era" / name, directory / name)
    # The codemod rewrites every program; what it cannot rewrite it flags (the quickstart's
    # report without a checkpoint, RTM101), exit 1.
    rewrite = _migrate("compat", compat_dir)
    assert rewrite.returncode == 1 and "RTM101" in rewrite.stdout, rewrite.stdout + rewrite.stderr
    for name in PROGRAMS:
        text = (compat_dir / name).read_text().split('"""', 2)[2]  # the code, after the docstring
        assert "from ray" not in text and "session." not in text and "import compat as train" in text
    baseline = original
    if setting == "1":  # raw V2 runs the natively migrated programs (raw V2 has no ray.air session)
        assert _migrate("native", native_dir).returncode == 1
        baseline = native_dir

    runs = [(f"raw {name}", baseline / name) for name in PROGRAMS]
    runs += [(f"compat {name}", compat_dir / name) for name in PROGRAMS]
    results = _run(setting, runs, tmp_path)
    for name in PROGRAMS:
        raw, ours = results[f"raw {name}"], results[f"compat {name}"]
        assert _approx_equal(ours, raw), (name, ours, raw)
    quick = results["compat torch_quickstart.py"]
    if setting == "0":  # what V1 gives: every report a row, the last report's metrics
        assert quick["rows"]["epoch"] == list(range(6)) and quick["metrics"]["training_iteration"] == 6
        assert quick["metrics"]["epoch"] == 5 and len(quick["best"]) == 2
        assert re.fullmatch(r"quickstart/TorchTrainer_<id>_00000_0_<date>", quick["path"])
    else:  # what V2 gives: the latest checkpoint's metrics, a row per kept checkpoint
        assert quick["metrics"]["epoch"] == 5 and quick["path"] == "quickstart"
        assert sorted(quick["rows"]["epoch"]) == quick["best"] and len(quick["best"]) == 2


def _approx_equal(ours: dict, raw: dict) -> bool:
    """Equal, floats within 1e-6 (the same seeded computation on both)."""

    def close(a, b) -> bool:
        if isinstance(a, float) or isinstance(b, float):
            return a == pytest.approx(b, rel=1e-6, abs=1e-9)
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
        return a == b

    return close(ours, raw)


@pytest.mark.extended  # the full suite's: CI rehearses the deletion with tests/compat/test_deletion_day.py's job
@pytest.mark.parametrize("variant", ["answers-v2", "refuses"])
def test_v1_era_programs_migrated_onto_compat_keep_v1s_results_on_the_day_ray_deletes_v1(
    variant: str, tmp_path: Path
) -> None:
    """The same programs, migrated onto compat, on the installed Ray made one without Train V1
    (tests/deletion/sitecustomize.py, docs/compatibility.md §34) with ``RAY_TRAIN_V2_ENABLED=0``
    and ``COMPAT_V1_ENGINE`` unset, against the original programs on raw V1 today."""
    original, compat_dir = tmp_path / "original", tmp_path / "onto_compat"
    for directory in (original, compat_dir):
        directory.mkdir()
        for name in PROGRAMS:
            shutil.copy(HERE / "v1_era" / name, directory / name)
    assert _migrate("compat", compat_dir).returncode == 1
    today = _run("0", [(f"raw {name}", original / name) for name in PROGRAMS], tmp_path)
    rehearsal = HERE.parent / "deletion"
    env = {"RAY_TRAIN_V2_ENABLED": "0", "COMPAT_REHEARSE_NO_V1": variant, "PYTHONPATH": str(rehearsal)}
    env["COMPAT_V1_ENGINE"] = ""  # empty: unset (compat finds the engine by itself)
    specs = [f"compat {name}|{compat_dir / name}|{tmp_path / 'storage' / ('day-' + name)}" for name in PROGRAMS]
    # compat first, as a migrated program imports it (a Ray that refuses =0 refuses at ray.train's import).
    found = script_lines("import compat\n" + RUNNER, "RESULT", specs, env, timeout_s=900, count=len(PROGRAMS))
    on_the_day = {summary.pop("label"): _normalized(summary) for summary in found}
    for name in PROGRAMS:
        ours, raw = on_the_day[f"compat {name}"], today[f"raw {name}"]
        assert _approx_equal({**ours, "path": None}, {**raw, "path": None}), (variant, name, ours, raw)
        assert re.fullmatch(r"quickstart/TorchTrainer_<id>_00000_0_<date>", ours["path"]), ours["path"]
