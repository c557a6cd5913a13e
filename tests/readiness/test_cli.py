"""``python -m compat readiness`` over a generated fleet: runs of several jobs (both layouts,
failed runs, unreadable records), source trees with checkouts, installed distributions and an
S3-compatible server on loopback; every format and the graded exit codes."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from compat.readiness import main
from compat.readiness._record import RECORD_FILE
from tests.readiness.fleet import write_fleet, write_tree

pytestmark = pytest.mark.one_pass  # reads files: no Ray, no mode


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--jobs", "1"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fleet_dirs(tmp_path):
    runs, src = tmp_path / "runs", tmp_path / "src"
    write_fleet(str(runs))
    write_tree(str(src))
    broken = runs / "embedder" / "TorchTrainer_00009_00000_0"
    broken.mkdir()
    (broken / RECORD_FILE).write_text('{"schema": "ray-train-compat/readiness", "version": 7}\n')
    return runs, src, broken


def test_the_fleet_as_json_jobs_repositories_blockers_trend_and_problems(capsys, fleet_dirs, tmp_path) -> None:
    runs, src, broken = fleet_dirs
    code, out, err = run(capsys, str(runs), str(src), str(tmp_path / "gone"), "--output-format", "json")
    report = json.loads(out)
    assert code == 6  # the worst found: a Tune callback, which raw V2 rejects
    assert report["summary"] == {
        "jobs": {"total": 4, "ready": 2, "blocked": 2},
        "repositories": {"total": 2, "ready": 1, "blocked": 1},
        "packages_blocking": 0,
        "packages_read": None,
        "worst": "breaks",
        "problems": 2,
    }
    jobs = {j["job"]: j for j in report["jobs"]}
    assert jobs["ranker"]["ready"] and jobs["ranker"]["trend"] == [2, 1, 0] and jobs["ranker"]["runs"] == 3
    assert jobs["embedder"]["worst"] == "breaks" and jobs["embedder"]["last_run"]["outcome"] == "failed"
    assert [(b["kind"], b["count"]) for b in jobs["embedder"]["blockers"]] == [
        ("tune-callback", 1),
        ("free-floating-report", 12),
    ]
    assert jobs["forecaster"]["severities"] == {"silent": 1} and jobs["clean"]["ready"]
    repos = {r["name"]: r for r in report["repositories"]}
    assert repos["modern"]["ready"] and repos["modern"]["findings"] == []
    assert repos["legacy"]["worst"] == "silent"
    assert {"RTM002", "RTM101", "RTM102"} <= {f["code"] for f in repos["legacy"]["findings"]}
    first, second = report["fix_first"][:2]
    assert (first["key"], first["severity"], first["jobs"]) == ("RTM106", "breaks", ["embedder"])
    # A behaviour counts once whether a run relied on it or the code says it.
    assert (second["key"], second["jobs"], second["repositories"]) == (
        "RTM101",
        ["embedder", "forecaster"],
        ["legacy"],
    )
    # Jobs relying on each behaviour, by their latest run each day: ranker migrates on day 3.
    assert report["trend"]["days"] == ["2026-09-21", "2026-09-22", "2026-09-23", "2026-09-24"]
    assert report["trend"]["behaviours"]["free-floating-report"] == [2, 3, 3, 2]
    problems = {p["path"]: p["message"] for p in report["problems"]}
    assert problems[str(tmp_path / "gone")] == "does not exist"
    assert "schema version 7, newer than this compat reads" in problems[f"{broken / RECORD_FILE}:1"]
    assert "warning: " in err and str(tmp_path / "gone") in err  # said on stderr too: stdout is the JSON


def test_a_record_appended_again_after_a_read_replaces_the_first(capsys, tmp_path) -> None:
    """fit() writes its record; the program's later read of V1's metrics_dataframe appends it
    again with that behaviour (compat_core.semantics.reads): one run, judged by the later line."""
    from dataclasses import replace

    from tests.readiness.fleet import behaviour, record

    first = replace(record("report-job", 0, {}), path=str(tmp_path / "run"))
    again = replace(first, behaviours=(behaviour("metrics-dataframe"),))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / RECORD_FILE).write_text(first.line() + again.line())
    code, out, _ = run(capsys, str(tmp_path), "--output-format", "json")
    (job,) = json.loads(out)["jobs"]
    assert code == 5 and job["runs"] == 1 and [b["kind"] for b in job["blockers"]] == ["metrics-dataframe"]


def test_every_format_shows_the_same_fleet(capsys, fleet_dirs, tmp_path) -> None:
    runs, src, _ = fleet_dirs
    code, text, _ = run(capsys, str(runs), str(src))
    assert code == 6
    assert text.startswith("Readiness to flip RAY_TRAIN_V2_ENABLED: 2 of 4 jobs ready; 1 of 2 repositories ready")
    blocked = text[text.index("Jobs blocked") : text.index("Jobs ready")]
    assert "embedder" in blocked and "forecaster" in blocked and "ranker" not in blocked
    assert "Jobs ready: 2" in text and "legacy" in text and "schema version 7" in text

    code, md, _ = run(capsys, str(runs), str(src), "--output-format", "markdown")
    assert "| job | status | blockers (latest run) | last run | trend |" in md
    assert "| embedder | blocked (breaks) | tune-callback 1x, free-floating-report 12x |" in md

    code, table, _ = run(capsys, str(runs), str(src), "--output-format", "csv")
    rows = list(csv.DictReader(io.StringIO(table)))
    by_name = {(r["type"], r["name"]): r for r in rows}
    assert by_name[("job", "embedder")]["worst"] == "breaks" and by_name[("job", "embedder")]["runs"] == "2"
    assert by_name[("job", "clean")]["status"] == "ready" and by_name[("repository", "legacy")]["silent"] == "2"
    assert [r["type"] for r in rows].count("problem") == 1

    page = tmp_path / "readiness.html"
    code, out, _ = run(capsys, str(runs), str(src), "--output-format", "html", "-o", str(page))
    assert code == 6 and out.startswith(f"{page}: 2 of 4 jobs ready")
    charts = Charts()
    charts.feed(page.read_text())
    assert charts.captions == ["free-floating-report", "session-api", "tune-callback"]
    assert charts.polylines == 3 and charts.rows >= 4 + 2 + 4  # blockers, jobs, repositories


class Charts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.captions: list[str] = []
        self.polylines = self.rows = 0
        self._in_caption = False

    def handle_starttag(self, tag, attrs) -> None:
        self._in_caption = tag == "figcaption"
        self.polylines += tag == "polyline"
        self.rows += tag == "tr"

    def handle_data(self, data) -> None:
        if self._in_caption:
            self.captions.append(data)
            self._in_caption = False


def test_exit_codes_are_graded_by_the_worst_blocker_at_or_above_fail_on(capsys, tmp_path) -> None:
    runs = tmp_path / "runs"
    write_fleet(str(runs))
    only = lambda *jobs: [str(p) for p in runs.iterdir() if p.name in jobs]  # noqa: E731
    assert run(capsys, *only("clean", "ranker"))[0] == 0  # ready: the latest runs rely on nothing
    assert run(capsys, *only("forecaster"))[0] == 5  # silent
    assert run(capsys, *only("forecaster"), "--fail-on", "breaks")[0] == 0
    assert run(capsys, *only("forecaster"), "--exit-zero")[0] == 0
    assert run(capsys, *only("clean"), str(tmp_path / "gone"))[0] == 1  # nothing blocks, but not all was read
    assert run(capsys, *only("embedder"), "--fail-on", "silent")[0] == 6
    code, _, err = run(capsys)
    assert code == 2 and "give a run storage location, a source tree or --site-packages" in err
    (tmp_path / "notes.txt").write_text("hello")
    code, out, _ = run(capsys, str(tmp_path / "notes.txt"))
    assert code == 1 and "neither a compat_readiness.jsonl nor a Python file" in out


def test_installed_packages_that_use_v1_only_apis_are_named_with_their_version(capsys, tmp_path, monkeypatch) -> None:
    """A distribution installed in a site directory (as pip lays it out), found through the
    interpreter's own metadata: its V1-era module is flagged, the rest of the environment is read."""
    site = tmp_path / "site"
    (site / "yolo_trainer").mkdir(parents=True)
    (site / "yolo_trainer" / "__init__.py").write_text(
        "from ray.air import session\n\ndef on_epoch_end(trainer):\n    session.report({'loss': trainer.loss})\n"
    )
    info = site / "yolo_trainer-8.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: yolo-trainer\nVersion: 8.1.0\n")
    (info / "RECORD").write_text("yolo_trainer/__init__.py,,\nyolo_trainer-8.1.0.dist-info/METADATA,,\n")
    monkeypatch.syspath_prepend(str(site))
    code, out, _ = run(capsys, "--site-packages", "--output-format", "json")
    report = json.loads(out)
    (package,) = [p for p in report["packages"] if p["name"] == "yolo-trainer"]
    assert package["version"] == "8.1.0" and package["files"] == 1 and package["path"] == str(site)
    assert {f["code"] for f in package["findings"]} == {"RTM002", "RTM101"}  # session.*, a report without a checkpoint
    assert package["findings"][0]["path"] == str(site / "yolo_trainer" / "__init__.py")
    assert code == 5 and report["summary"]["packages_blocking"] >= 1  # its free-floating report: silent
    # The first line says how many installed packages were read, and how many block.
    read, blocking = report["summary"]["packages_read"], report["summary"]["packages_blocking"]
    assert read >= blocking >= 1
    first = (run(capsys, "--site-packages")[1]).splitlines()[0]
    assert f"{blocking} of {read} installed packages {'blocks' if blocking == 1 else 'block'} the flip" in first


def test_the_command_line_entry_points(tmp_path) -> None:
    runs = tmp_path / "runs"
    write_fleet(str(runs))
    for command in (
        [sys.executable, "-m", "compat", "readiness"],
        [os.path.join(os.path.dirname(sys.executable), "ray-train-readiness")],
    ):
        done = subprocess.run(
            [*command, str(runs), "--output-format", "json"], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 6, done.stderr
        assert json.loads(done.stdout)["summary"]["jobs"]["total"] == 4


def test_runs_on_an_object_store_are_read_through_pyarrow(capsys, s3, tmp_path) -> None:
    import pyarrow.fs as pafs

    local = tmp_path / "runs"
    write_fleet(str(local), layout="v2")  # V2's run directories: <storage>/<run>/
    (local / "ranker-9").mkdir()
    (local / "ranker-9" / RECORD_FILE).write_text("not json\n")
    bucket, _ = pafs.FileSystem.from_uri("s3://fleet?allow_bucket_creation=true")
    bucket.create_dir("fleet")
    pafs.copy_files(str(local), "s3://fleet/ray_results")
    code, out, _ = run(capsys, "s3://fleet/ray_results", "s3://fleet/nothing-here", "--output-format", "json")
    report = json.loads(out)
    assert code == 6 and report["summary"]["jobs"] == {"total": 4, "ready": 2, "blocked": 2}
    jobs = {j["job"]: j for j in report["jobs"]}
    assert jobs["ranker"]["trend"] == [2, 1, 0] and jobs["embedder"]["last_run"]["outcome"] == "failed"
    assert report["problems"] == [  # each location's in turn
        {
            "path": "s3://fleet/ray_results/ranker-9/compat_readiness.jsonl:1",
            "message": "not JSON (Expecting value at column 1; a write cut short?)",
        },
        {"path": "s3://fleet/nothing-here", "message": "does not exist"},
    ]


RANKER = """\
from ray import train


def train_func(config):
    train.report({"loss": 1.0})  # RTM101: the runtime records it when a run relies on it
"""
FORECASTER = """\
from ray.train.torch import TorchTrainer

result = TorchTrainer(lambda: None).fit()
print(result.log_dir)  # RTM105: an attribute the runtime never sees read
"""


def test_a_job_whose_runs_and_source_disagree_gets_one_verdict_saying_which_it_believes(capsys, tmp_path) -> None:
    """``ranker``'s runs relied on nothing, its source flags a free-floating report: the runtime
    records that when it runs, so the runs are believed (ready). ``forecaster``'s runs relied on
    nothing, its source reads ``result.log_dir``, which no run record can see: the source is
    believed (blocked). Both scripts ran from another checkout (``/jobs/<job>.py``)."""
    from dataclasses import replace

    from tests.readiness.fleet import record

    runs, repo = tmp_path / "runs", tmp_path / "checkout"
    for job in ("ranker", "forecaster"):
        (runs / job).mkdir(parents=True)
        (runs / job / RECORD_FILE).write_text(replace(record(job, 1, {}), path=str(runs / job)).line())
    (repo / ".git").mkdir(parents=True)
    (repo / "jobs").mkdir()
    (repo / "jobs" / "ranker.py").write_text(RANKER)
    (repo / "jobs" / "forecaster.py").write_text(FORECASTER)

    code, out, _ = run(capsys, str(runs), str(repo), "--output-format", "json")
    jobs = {j["job"]: j for j in json.loads(out)["jobs"]}
    assert jobs["ranker"]["ready"] and jobs["ranker"]["source_blockers"] == []
    assert "RTM101 at ranker.py:5" in jobs["ranker"]["why"] and "the runs are believed" in jobs["ranker"]["why"]
    forecaster = jobs["forecaster"]
    assert not forecaster["ready"] and forecaster["worst"] == "breaks"
    assert [(b["code"], b["line"]) for b in forecaster["source_blockers"]] == [("RTM105", 4)]
    assert "the source is believed" in forecaster["why"]
    (blocker,) = [b for b in json.loads(out)["fix_first"] if b["key"] == "RTM105"]
    assert blocker["jobs"] == ["forecaster"] and blocker["repositories"] == ["checkout"]

    _, text, _ = run(capsys, str(runs), str(repo))
    blocked = text[text.index("Jobs blocked") : text.index("Jobs ready")]
    assert "forecaster" in blocked and "RTM105 (source)" in blocked and "ranker" not in blocked
    assert "ranker: ready by its runs, over the source's RTM101 at ranker.py:5" in text
    _, md, _ = run(capsys, str(runs), str(repo), "--output-format", "markdown")
    assert "| forecaster | blocked (breaks) | RTM105 (source) |" in md
    _, table, _ = run(capsys, str(runs), str(repo), "--output-format", "csv")
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(table)) if r["type"] == "job"}
    assert rows["forecaster"]["status"] == "blocked"
    assert rows["forecaster"]["details"].startswith("RTM105 (source); its source")
    assert rows["ranker"]["status"] == "ready" and "the runs are believed" in rows["ranker"]["details"]
