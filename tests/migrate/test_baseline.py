"""Severity on every finding, ``--fail-on``, ``--statistics`` and ``--add-noqa``, through the
command line as a team adopting the codemod in CI runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.rules import RULES
from migrate.rules.framework_checkpoints import STILL_IN_RAY
from migrate.severity import SEVERITIES

JOB = """\
from ray import train
from ray.air import session


def loop(config):
    train.report({"a": 1})
    name = train.get_context().get_trial_name()
    session.report({"b": 2})
"""
# line 6: RTM101 (silent); line 7: RTM111 (breaks); line 8: RTM002 (fix) and RTM101 (silent)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "migrate", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    (tmp_path / "job.py").write_text(JOB)
    return tmp_path


def test_every_rule_has_a_severity_and_only_rewrites_are_fix() -> None:
    for rule in RULES:
        assert rule.severity in SEVERITIES, rule.code
        assert (rule.severity == "fix") == (rule.fix_safety != "none"), rule.code


def test_severity_in_every_output_format(job: Path) -> None:
    text = cli("--check", "job.py", cwd=job).stdout.splitlines()
    assert [line.split(" ", 3)[:3] for line in text] == [
        ["job.py:6:5:", "RTM101", "[silent]"],
        ["job.py:7:12:", "RTM111", "[breaks]"],
        ["job.py:8:5:", "RTM002", "[fix]"],  # --check lists the pending rewrites too, as ruff
        ["job.py:8:5:", "RTM101", "[silent]"],
    ]
    rows = json.loads(cli("--check", "--output-format", "json", "job.py", cwd=job).stdout)
    assert [(r["code"], r["severity"]) for r in rows] == [
        ("RTM101", "silent"), ("RTM111", "breaks"), ("RTM002", "fix"), ("RTM101", "silent"),
    ]  # fmt: skip
    github = cli("--check", "--output-format", "github", "job.py", cwd=job).stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in github] == ["::warning", "::error", "::notice", "::warning"]
    assert github[1].startswith("::error title=migrate RTM111 (breaks),file=job.py,line=7,")
    log = json.loads(cli("--check", "--output-format", "sarif", "job.py", cwd=job).stdout)
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["level"], r["properties"]["severity"]) for r in results] == [
        ("RTM101", "warning", "silent"), ("RTM111", "error", "breaks"), ("RTM002", "note", "fix"),
        ("RTM101", "warning", "silent"),
    ]  # fmt: skip
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["RTM111"]["properties"]["severity"] == "breaks"
    assert rules["RTM111"]["defaultConfiguration"]["level"] == "error"
    listed = cli("--list-rules", cwd=job).stdout
    assert any(line.startswith("RTM111") and " breaks " in line for line in listed.splitlines())


def test_a_finding_milder_than_its_rule_says_so(tmp_path: Path) -> None:
    (tmp_path / "ckpt.py").write_text(
        "from ray.train.torch import TorchCheckpoint\n"
        "from ray.train.lightning import LightningCheckpoint\n\n"
        "a = TorchCheckpoint.from_state_dict({})\n"
        "b = LightningCheckpoint.from_directory('d')\n"
    )
    rows = json.loads(cli("--check", "--output-format", "json", "--select", "RTM104", "ckpt.py", cwd=tmp_path).stdout)
    by_line = {r["line"]: r["severity"] for r in rows}
    assert by_line[4] == "warns" and by_line[5] == "breaks"  # TorchCheckpoint still exists; Lightning's is gone
    assert "TorchCheckpoint" in STILL_IN_RAY
    gate = cli("--check", "--fail-on", "silent", "--select", "RTM104", "ckpt.py", cwd=tmp_path)
    assert gate.returncode == 1  # the Lightning one breaks


def test_fail_on_counts_only_that_severity_or_worse(job: Path) -> None:
    assert cli("--check", "job.py", cwd=job).returncode == 1
    assert cli("--check", "--fail-on", "breaks", "job.py", cwd=job).returncode == 1  # RTM111
    assert cli("--check", "--fail-on", "breaks", "--ignore", "RTM111", "job.py", cwd=job).returncode == 0
    assert cli("--check", "--fail-on", "silent", "--ignore", "RTM111", "job.py", cwd=job).returncode == 1
    only_fix = ["--ignore", "RTM1"]
    assert cli("--check", *only_fix, "job.py", cwd=job).returncode == 1  # a pending rewrite fails by default
    assert cli("--check", "--fail-on", "warns", *only_fix, "job.py", cwd=job).returncode == 0
    (job / "pyproject.toml").write_text('[tool.ray-train-migrate]\nfail-on = "breaks"\nignore = ["RTM111"]\n')
    assert cli("--check", "job.py", cwd=job).returncode == 0  # from the configuration
    assert cli("--check", "--fail-on", "silent", "job.py", cwd=job).returncode == 1  # the command line wins
    (job / "pyproject.toml").write_text('[tool.ray-train-migrate]\nfail-on = "error"\n')
    bad = cli("--check", "job.py", cwd=job)
    assert bad.returncode == 2
    assert "'fail-on' is 'error'; accepted values: breaks, silent, warns, fix" in bad.stderr
    wrong = cli("--check", "--fail-on", "all", "job.py", cwd=job)
    assert wrong.returncode == 2 and "invalid choice: 'all'" in wrong.stderr


def test_statistics_count_findings_by_rule_worst_first_and_write_nothing(job: Path) -> None:
    proc = cli("--statistics", "job.py", cwd=job)
    assert proc.returncode == 1
    assert [line.split("\t") for line in proc.stdout.splitlines()[:3]] == [
        ["1", "RTM111", "breaks", "[ ] trial-api"],
        ["2", "RTM101", "silent", "[ ] free-floating-report"],
        ["1", "RTM002", "fix", "[*] session-calls"],
    ]
    assert proc.stdout.splitlines()[3] == "Found 4 finding(s): breaks 1, silent 2, warns 0, fix 1"
    assert (job / "job.py").read_text() == JOB
    rows = json.loads(cli("--statistics", "--output-format", "json", "job.py", cwd=job).stdout)
    assert rows[0] == {"code": "RTM111", "name": "trial-api", "severity": "breaks", "count": 1, "fixable": False}
    sarif = cli("--statistics", "--output-format", "sarif", "job.py", cwd=job)
    assert sarif.returncode == 2 and "--statistics prints text or json" in sarif.stderr
    both = cli("--statistics", "--check", "job.py", cwd=job)
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_statistics_count_notebook_cells_that_do_not_parse_as_cells_not_files(tmp_path: Path) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook = {
        "cells": [
            {**cell, "source": ["from ray.air import session\n", "session.report({'a': 1})\n"]},
            {**cell, "source": ["def f(:\n"]},
            {**cell, "source": ["x = (\n"]},
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "sweep.ipynb").write_text(json.dumps(notebook))
    (tmp_path / "broken.py").write_text("from ray.air import session\nsession.report({})\ndef f(:\n")
    lines = cli("--statistics", ".", cwd=tmp_path).stdout.splitlines()
    assert lines[-3:-1] == ["1\tERROR\terror\t[ ] not-processed", "2\tERROR\terror\t[ ] cell-not-parsed"]
    assert lines[-1].endswith("; 1 file(s) not processed; 2 notebook cell(s) not processed")


MARKED = """\
from ray import train
from ray.air import session


def loop(config):
    train.report({"a": 1})  # we log to MLflow too  # noqa: RTM101
    name = train.get_context().get_trial_name()  # noqa: E501, RTM111
    session.report({"b": 2})  # noqa
    train.report({"s": \"\"\"multi
line\"\"\"})  # noqa: RTM101
    x = train.get_context().get_trial_id() + \\
        "y"  # noqa: RTM111
"""


def test_add_noqa_marks_every_flag_once_keeping_comments_and_other_codes(tmp_path: Path) -> None:
    before = MARKED.replace("  # noqa: RTM101\n", "\n", 1).replace(", RTM111", "").replace("  # noqa: RTM101", "")
    before = before.replace("  # noqa: RTM111\n", "\n")
    (tmp_path / "job.py").write_bytes(before.replace("\n", "\r\n").encode())
    assert "noqa: RTM" not in before
    proc = cli("--add-noqa", "job.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Added 4 noqa directive(s) in 1 file(s)." in proc.stderr
    assert "1 pending rewrite(s) are not marked" in proc.stderr  # session.report -> train.report
    after = (tmp_path / "job.py").read_bytes().decode()
    assert after == MARKED.replace("\n", "\r\n")  # line endings kept; the string and the continuation
    compile(after, "job.py", "exec")  # end where their comment can go
    again = cli("--add-noqa", "job.py", cwd=tmp_path)
    assert "Added 0 noqa directive(s)" in again.stderr and (tmp_path / "job.py").read_bytes().decode() == after
    gate = cli("--check", "--fail-on", "warns", "job.py", cwd=tmp_path)
    assert gate.returncode == 0 and gate.stdout.count("[fix]") == 1  # the baseline holds; the rewrite is listed
    assert "5 suppressed by noqa" in gate.stderr  # with the bare one on session.report


def test_add_noqa_on_a_notebook_and_a_latin1_file(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["%pip install ray\n", "from ray import train\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["def f(config):\n", "    train.report({'a': 1})\n"]},
    ]  # fmt: skip
    notebook = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    (tmp_path / "old.py").write_bytes(
        "# -*- coding: latin-1 -*-\nfrom ray import train\ntrain.report({'caf\xe9': 1})\n".encode("latin-1")
    )
    proc = cli("--add-noqa", ".", cwd=tmp_path)
    assert "Added 2 noqa directive(s) in 2 file(s)." in proc.stderr, proc.stderr
    marked = json.loads((tmp_path / "nb.ipynb").read_text())
    assert marked["cells"][2]["source"] == ["def f(config):\n", "    train.report({'a': 1})  # noqa: RTM101\n"]
    assert marked["cells"][:2] == cells[:2] and marked["metadata"] == notebook["metadata"]
    assert (
        (tmp_path / "old.py").read_bytes().decode("latin-1").endswith("train.report({'caf\xe9': 1})  # noqa: RTM101\n")
    )
    assert cli("--check", ".", cwd=tmp_path).returncode == 0
