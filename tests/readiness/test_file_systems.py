"""``python -m compat readiness`` on a real file system, as a user who cannot read everything:
each path it could not read is named once, with the OS's reason; a tree with a file it could not
read is not "ready"; reading nothing is no verdict. The permission cases run the command without
the rights to read past permission bits: as root (who reads everything, and these tests run as
root here), with the capabilities CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compat.readiness import main
from compat.readiness._record import RECORD_FILE
from tests.readiness.fleet import record

pytestmark = pytest.mark.one_pass  # reads files: no Ray, no mode

ROOT = Path(__file__).resolve().parents[2]
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _without_root_rights() -> None:
    """In the child before it runs Python: root without the rights that ignore permission bits."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def readiness(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    dropped = {"preexec_fn": _without_root_rights} if os.geteuid() == 0 else {}
    return subprocess.run(
        [sys.executable, "-m", "compat", "readiness", *argv, "--jobs", "1"],
        capture_output=True, text=True, timeout=120, env=env, **dropped,
    )  # fmt: skip


@pytest.fixture
def shared(tmp_path: Path):
    """A directory whose locked parts are unlocked again for pytest to remove."""
    yield tmp_path
    for directory, dirs, files in os.walk(tmp_path):
        for name in dirs + files:
            os.chmod(os.path.join(directory, name), 0o700)


def test_unreadable_paths_are_named_once_with_the_os_reason(shared: Path) -> None:
    runs, src = shared / "runs", shared / "src"
    (runs / "job" / "run_0").mkdir(parents=True)
    (runs / "job" / "run_0" / RECORD_FILE).write_text(record("job", 1, {}).line())
    locked_run = runs / "job" / "run_1"
    locked_run.mkdir()
    (locked_run / RECORD_FILE).write_text(record("job", 2, {"session-api": 1}).line())
    locked_record = runs / "other" / RECORD_FILE
    locked_record.parent.mkdir()
    locked_record.write_text(record("other", 1, {}).line())
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "ok.py").write_text("import compat as train\n")
    (src / "pkg" / "secret.py").write_text("from ray.air import session\nsession.report({'loss': 1})\n")
    locked_dir = shared / "nothing_for_you"
    locked_dir.mkdir()
    for path in (locked_run, locked_record, src / "pkg" / "secret.py", locked_dir):
        path.chmod(0o000)

    # The record file is reached twice (its run storage, then itself): named once.
    done = readiness(str(runs), str(locked_record), str(src), str(locked_dir), "--output-format", "json")
    report = json.loads(done.stdout)
    problems = [(p["path"], p["message"]) for p in report["problems"]]
    assert sorted(problems) == sorted([
        (str(locked_run), "cannot be read (Permission denied)"),
        (str(locked_record), "cannot be read (Permission denied)"),
        (str(src / "pkg" / "secret.py"), "cannot read: Permission denied"),
        (str(locked_dir), "cannot be read (Permission denied)"),
    ]), done.stderr  # fmt: skip
    (repository,) = report["repositories"]
    assert repository["status"] == "unknown (1 file not read)" and not repository["ready"]
    assert report["summary"]["repositories"] == {"total": 1, "ready": 0, "blocked": 1}
    assert done.returncode == 1  # nothing blocks what was read, but not everything was
    text = readiness(str(runs), str(src)).stdout
    assert "3 paths not read" in text.splitlines()[0] and "nothing blocks the flip" in text.splitlines()[0]


def test_reading_nothing_is_no_verdict(capsys, tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    code = main([str(tmp_path / "empty"), str(tmp_path / "missing"), "--jobs", "1"])
    first = capsys.readouterr().out.splitlines()[0]
    assert code == 1
    assert first == (
        "Readiness to flip RAY_TRAIN_V2_ENABLED: nothing read: no run's record, source file or installed "
        "package (no verdict; 2 paths not read)"
    )


def test_the_text_names_the_ready_jobs(capsys, tmp_path) -> None:
    for job, kinds in (("ranker", {}), ("embedder", {"tune-callback": 1}), ("clean", {})):
        (tmp_path / job).mkdir()
        (tmp_path / job / RECORD_FILE).write_text(record(job, 1, kinds).line())
    assert main([str(tmp_path), "--jobs", "1"]) == 6
    out = capsys.readouterr().out
    assert "Jobs ready: 2 (their latest run relied on no V1-only behaviour): clean, ranker" in out
