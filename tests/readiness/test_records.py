"""The readiness record each run leaves: its schema read back, what a reader refuses and why,
and the job a run is counted under. (A real fit writing it: tests/compat/test_every_report.py.)"""

from __future__ import annotations

import json

import pytest

from compat.readiness import _record as readiness
from tests.readiness.fleet import record

pytestmark = pytest.mark.one_pass  # plain code: no Ray, no mode


def test_a_record_reads_back_as_written_with_iso_times_and_the_worst_severity() -> None:
    written = record("embedder", 2, {"tune-callback": 1, "free-floating-report": 12}, outcome="failed")
    data = json.loads(written.line())
    assert data["schema"] == "ray-train-compat/readiness" and data["version"] == 1
    assert data["ended_at"].endswith("Z") and data["versions"]["ray"] == "2.60.0"
    assert [b["kind"] for b in data["behaviours"]] == ["tune-callback", "free-floating-report"]
    back = readiness.from_json(data)
    assert back == written
    assert back.worst == "breaks" and readiness.from_json(json.loads(record("x", 0, {}).line())).worst is None


def test_a_reader_keeps_every_good_line_and_names_each_bad_one() -> None:
    good = record("ranker", 0, {"session-api": 4}).line()
    newer = json.dumps({**json.loads(good), "version": 2})
    unknown_field = json.dumps({**json.loads(good), "added_later": [1, 2]})  # a later minor addition
    text = good + "\n" + '{"job": "cut sh' + "\n" + newer + "\n" + '{"hello": 1}\n' + unknown_field + "\n"
    records, problems = readiness.parse_lines(text)
    assert [r.job for r in records] == ["ranker", "ranker"]
    assert problems[0] == "line 3: not JSON (Unterminated string starting at column 9; a write cut short?)"
    assert problems[1].startswith("line 4: a readiness record of schema version 2, newer than this compat reads")
    assert "upgrade ray-train-compat" in problems[1]
    assert problems[2] == 'line 5: not a readiness record (no "schema": "ray-train-compat/readiness")'
    missing = {k: v for k, v in json.loads(good).items() if k != "job"}
    with pytest.raises(readiness.RecordError, match="the field 'job' is missing"):
        readiness.from_json(missing)


@pytest.mark.parametrize(
    ("env", "run_name", "script", "job"),
    [
        ({"COMPAT_JOB_NAME": "nightly-ranker"}, "given", "/src/train.py", "nightly-ranker"),  # the scheduler's id wins
        ({}, "given", "/src/train.py", "given"),  # RunConfig(name=...)
        ({}, None, "/src/train.py", "train"),  # the script
        ({}, None, "/venv/lib/python3.11/site-packages/pytest/__main__.py", "pytest"),  # python -m pytest
        ({}, None, "-c", "python -c"),
        ({"JPY_SESSION_NAME": "/home/me/Explore.ipynb"}, None, "/venv/ipykernel_launcher.py", "Explore"),
    ],
)
def test_the_job_a_run_counts_under(env, run_name, script, job) -> None:
    assert readiness.job_name(run_name, script, env) == job


def test_a_jobs_blocker_names_the_command_that_flags_its_code_on_compat(tmp_path, capsys) -> None:
    """Runs are compat's: the advice for what they relied on is the codemod's compat target,
    and that command does flag the job's code (the default target skips a file on compat)."""
    from compat.readiness._collect import Collected
    from compat.readiness._fleet import fleet
    from migrate.__main__ import main as migrate

    (blocker,) = fleet(Collected(records=[record("ranker", 0, {"metrics-dataframe": 1})])).blockers
    assert blocker.rule == "RTM102"
    assert "`python -m migrate --target compat` flags it in the jobs' code (on compat)" in blocker.fix
    assert "`python -m migrate` flags it;" not in blocker.fix  # no source tree read: one command

    job = tmp_path / "ranker.py"
    job.write_text(
        "import compat as train\nfrom compat.torch import TorchTrainer\n\n"
        "result = TorchTrainer(lambda: None).fit()\nprint(result.metrics_dataframe)\n"
    )
    assert migrate([str(job), "--check", "--isolated"]) == 0  # the default target: nothing flagged
    assert migrate([str(job), "--check", "--isolated", "--target", "compat"]) == 1
    assert f"{job}:5:7: RTM102" in capsys.readouterr().out
