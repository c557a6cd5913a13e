"""`python -m compat compare` on real scripts, on real Ray (each run starts its own cluster)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def compare(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compat", "compare", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [((), "give the script to run after --"), (("--", "missing.py"), "no such script"), (("--", "-m"), "-m needs")],
)
def test_usage_errors_exit_2(tmp_path, args, message) -> None:
    run = compare(*args, cwd=tmp_path)
    assert run.returncode == 2 and message in run.stderr


@pytest.mark.one_pass  # compare runs the script under each setting itself
def test_a_script_that_makes_no_fit_compares_nothing_and_says_so(tmp_path) -> None:
    (tmp_path / "no_fit.py").write_text("print('configured, never trained')\n")
    run = compare("--json", "out.json", "--", "no_fit.py", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "No fit() was made under either setting: nothing was compared" in run.stdout
    assert "0 fit(s) compared" not in run.stdout
    assert json.loads((tmp_path / "out.json").read_text())["verdict"]["ok"] is False


@pytest.mark.ray
@pytest.mark.one_pass  # compare runs the script under each setting itself
# The full suite's (4 min on CI's 2 cores): CI runs compare on a real script in the installed
# package's step (scripts/test_installed.sh) and in the docs' blocks (docs/compare.md).
@pytest.mark.extended
def test_every_difference_explained_a_sweeps_trials_paired_and_a_script_failing_only_under_v2_exits_1(
    tmp_path,
) -> None:
    """tests/compare/sweep.py: two_fits.py's two fits (free-floating reports; checkpoints with
    validation), a Tuner sweep (its trials paired by sample, its concurrency explained), then a
    read of result.metrics that raises under V2 only; the JSON and a self-contained HTML report.
    One script: each compare run starts a cluster per setting."""
    out_json, out_html, work = tmp_path / "cmp.json", tmp_path / "cmp.html", tmp_path / "work"
    args = ("--json", str(out_json), "--html", str(out_html), "--workdir", str(work))
    run = compare(*args, "--", str(HERE / "sweep.py"), cwd=tmp_path)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert "fails under V2 only" in run.stdout
    assert "Ray" not in run.stdout.split("fit 1")[0].replace("RAY_TRAIN_V2_ENABLED", "")  # Ray's output is in the logs
    report = json.loads(out_json.read_text())
    assert report["schema"] == "ray-train-compat/compare/1"
    assert report["runs"]["v1"]["exit_status"] == 0 and report["runs"]["v2"]["exit_status"] == 1
    assert "TypeError: 'NoneType' object is not subscriptable" in report["runs"]["v2"]["traceback_tail"][-1]
    assert [r["log"] for r in report["runs"].values()] == [str(work / "v1.log"), str(work / "v2.log")]
    assert all(Path(r["log"]).exists() for r in report["runs"].values())
    first, second, last, sweep, *trials = report["fits"]  # fits outside Tune first, then each sweep and its trials
    assert {d["aspect"]: d["link"].split("#")[1] for d in first["differences"]} == {
        "result.metrics": "3-resultmetrics",
        "metrics_dataframe rows": "4-resultmetrics_dataframe",
        "metrics_dataframe columns": "4-resultmetrics_dataframe",  # V2 has no frame: not "identical"
        "run directory": "5-progresscsv-and-resultjson",
    }
    assert first["v1"]["metrics"]["loss"] == pytest.approx(1 / 3) and first["v2"]["metrics"] is None
    aspects = {d["aspect"] for d in second["differences"]}
    assert aspects >= {"checkpoint directories", "run directory"} and all(d["explained"] for d in second["differences"])
    assert [r["status"] for r in second["v2"]["rounds"]] == ["VALIDATED"] * 3
    assert sweep["title"].startswith('sweep 4: Tuner "lr_sweep"')
    differences = {d["aspect"]: (d["v1"], d["v2"], d["link"].split("#")[1]) for d in sweep["differences"]}
    # V1: each trial reserved both CPUs, one at a time; V2: a trial reserves none.
    assert differences == {"most trials at once": (1, 2, "24-hyperparameter-search-tunetunertrainer-param_space")}
    assert [t["v1"]["trial"]["config"] == t["v2"]["trial"]["config"] for t in trials] == [True, True]
    assert sorted(t["v1"]["trial"]["config"]["train_loop_config"]["lr"] for t in trials) == [0.1, 0.2]
    assert all(len(t["v1"]["rounds"]) == len(t["v2"]["rounds"]) == 2 for t in trials)
    assert all(d["explained"] for t in trials for d in t["differences"])
    assert last["v1"]["metrics"]["loss"] == 0.5 and last["v2"]["metrics"] is None  # what the script read
    page = out_html.read_text()
    # One plot per numeric metric of each fit: loss and epoch for the two fits and each trial,
    # loss for the last fit.
    assert len(re.findall(r"<figure data-metric=", page)) == 9 and page.count("<svg") == 9
    # Nothing fetched from anywhere: no script, stylesheet, image or external url(); SVG's own
    # url(#clip) fragments are references inside the page.
    assert not re.search(r"<script|<link|<img|@import|url\((?!#)|src=|href=['\"]https?:", page)
