"""End to end: the CLI over a tree of real files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.__main__ import main

OLD = """from ray.air import session, ScalingConfig
from ray.train.torch import TorchTrainer


def train_func(config):
    for epoch in range(2):
        session.report({"epoch": epoch})


result = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2)).fit()
print(result.metrics_dataframe)
"""

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
        {
            "cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": ["%pip install ray\n", "from ray.air import session\n", "session.report({'a': 1})\n"],
        },
    ],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}  # fmt: skip


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train_job.py").write_text(OLD)
    (tmp_path / "pkg" / "plain.py").write_text("import os\nprint(os.getcwd())\n")
    (tmp_path / "pkg" / "broken.py").write_text("from ray.air import session\ndef f(:\n")
    (tmp_path / "pkg" / "latin1.py").write_bytes("# ray caf\xe9\n".encode("latin-1"))
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    for skipped in (".venv/lib/site-packages/ray_thing", ".git", "build/site-packages"):
        (tmp_path / skipped).mkdir(parents=True)
        (tmp_path / skipped / "old.py").write_text(OLD)
    return tmp_path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "migrate", *args], cwd=cwd, capture_output=True, text=True)


def test_diff_writes_nothing_and_exits_1(tree: Path) -> None:
    before = (tree / "pkg" / "train_job.py").read_text()
    proc = cli("--diff", ".", cwd=tree)
    assert proc.returncode == 1  # changes pending; the broken and non-UTF-8 files are findings too
    assert "+from ray import train" in proc.stdout and "-from ray.air import session, ScalingConfig" in proc.stdout
    assert (tree / "pkg" / "train_job.py").read_text() == before
    assert "broken.py:2:7: ERROR does not parse" in proc.stderr  # the parse error's own line and column
    assert "latin1.py:1:1: ERROR not UTF-8" in proc.stderr


def test_write_then_second_run_changes_nothing(tree: Path) -> None:
    (tree / "pkg" / "broken.py").unlink()
    (tree / "pkg" / "latin1.py").unlink()
    job = tree / "pkg" / "train_job.py"
    os.chmod(job, 0o751)
    written = cli(".", cwd=tree)
    assert written.returncode == 1  # written, but flagged findings remain (as ruff check --fix)
    assert "2 rewritten" in written.stderr and "3 flagged" in written.stderr
    text = job.read_text()
    assert "from ray.train import ScalingConfig\nfrom ray import train\n" in text
    assert 'train.report({"epoch": epoch})' in text
    assert stat.S_IMODE(job.stat().st_mode) == 0o751
    compile(text, str(job), "exec")
    notebook = json.loads((tree / "nb.ipynb").read_text())
    assert notebook["cells"][1]["source"] == [
        "%pip install ray\n",
        "from ray import train\n",
        "train.report({'a': 1})\n",
    ]
    for skipped in (".venv/lib/site-packages/ray_thing", ".git", "build/site-packages"):
        assert (tree / skipped / "old.py").read_text() == OLD
    again = cli("--diff", ".", cwd=tree)
    assert again.returncode == 1 and "@@" not in again.stdout  # no changes, but flags remain


def test_check_fails_on_flags_even_when_nothing_changes(tree: Path) -> None:
    (tree / "pkg" / "broken.py").unlink()
    (tree / "pkg" / "latin1.py").unlink()
    assert cli("--exit-zero", ".", cwd=tree).returncode == 0  # written; the flags are left to a person
    proc = cli("--check", ".", cwd=tree)
    assert proc.returncode == 1
    lines = (tree / "pkg" / "train_job.py").read_text().splitlines()
    report_line = next(i for i, line in enumerate(lines, 1) if "train.report" in line)
    frame_line = next(i for i, line in enumerate(lines, 1) if "metrics_dataframe" in line)
    assert f"pkg/train_job.py:{report_line}:9: RTM101" in proc.stdout
    assert f"pkg/train_job.py:{frame_line}:7: RTM102" in proc.stdout


def test_json_report_lists_fixes_flags_and_errors(tree: Path) -> None:
    proc = cli("--check", "--output-format", "json", ".", cwd=tree)
    rows = json.loads(proc.stdout)
    by_file = {(Path(r["file"]).name, r["code"], r["fixed"]) for r in rows}
    assert ("train_job.py", "RTM001", True) in by_file and ("train_job.py", "RTM002", True) in by_file
    assert ("train_job.py", "RTM101", False) in by_file and ("broken.py", "ERROR", False) in by_file
    assert {"code", "file", "line", "col", "message", "fixed", "severity", "url"} == set(rows[0])
    flag = next(r for r in rows if r["code"] == "RTM101" and r["file"].endswith("train_job.py"))
    assert flag["line"] == 7  # --check reports lines of the file as it is
    assert flag["url"] == "docs/rules.md#rtm101"
    errors = {Path(r["file"]).name: (r["line"], r["col"]) for r in rows if r["code"] == "ERROR"}
    assert errors == {"broken.py": (2, 7), "latin1.py": (1, 1)}  # the parse error's own place; 1:1 for the file


def test_github_annotations_one_per_finding(tree: Path) -> None:
    proc = cli("--check", "--output-format", "github", ".", cwd=tree)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines and all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
    flag = next(line for line in lines if "RTM101" in line and "train_job.py" in line)  # silent: a warning
    assert flag.startswith("::warning title=migrate RTM101 (silent),file=./pkg/train_job.py,line=7,col=")
    assert any(line.startswith("::error ") and "broken.py,line=2,col=7" in line for line in lines)
    assert any(line.startswith("::notice title=migrate RTM002 (fix),") for line in lines)  # pending rewrites too
    written = cli("--output-format", "github", ".", cwd=tree)  # after a write, rewrites are done: not reported
    assert "(fix)" not in written.stdout and "RTM101" in written.stdout


def test_sarif_for_code_scanning(tree: Path) -> None:
    log = json.loads(cli("--diff", "--output-format", "sarif", ".", cwd=tree).stdout)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["RTM101"]["helpUri"] == "docs/rules.md#rtm101" and rules["RTM101"]["shortDescription"]["text"]
    result = next(
        r
        for r in run["results"]
        if r["ruleId"] == "RTM101" and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(".py")
    )
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "pkg/train_job.py"
    assert location["region"]["startLine"] == 7 and result["level"] == "warning"
    assert any(r["ruleId"] == "ERROR" and r["level"] == "error" for r in run["results"])
    both = cli("--report", "json", "--output-format", "sarif", ".", cwd=tree)
    assert both.returncode == 2 and "older name" in both.stderr


def test_select_ignore_and_exclude(tree: Path) -> None:
    rows = json.loads(
        cli("--diff", "--report", "json", "--select", "RTM1", "--exclude", "*.ipynb", ".", cwd=tree).stdout
    )
    assert {r["code"] for r in rows} <= {"RTM101", "RTM102", "RTM100", "ERROR"}
    assert not any(r["file"].endswith(".ipynb") for r in rows)
    rows = json.loads(cli("--diff", "--report", "json", "--ignore", "RTM101", ".", cwd=tree).stdout)
    assert "RTM101" not in {r["code"] for r in rows}
    bad = cli("--select", "XYZ9", ".", cwd=tree)
    assert bad.returncode == 2 and "unknown rule code" in bad.stderr


def test_jobs_gives_the_same_result(tree: Path) -> None:
    one = json.loads(cli("--diff", "--report", "json", ".", cwd=tree).stdout)
    two = json.loads(cli("--diff", "--report", "json", "--jobs", "2", ".", cwd=tree).stdout)
    assert one == two


def test_a_large_tree_uses_every_core_unasked_with_the_same_output(tmp_path: Path, monkeypatch) -> None:
    """As ruff: no --jobs on a tree of many files uses the cores; output, order included, is
    what one process gives. A small tree stays in one process (starting more costs more)."""
    from migrate import __main__ as cli_module

    for i in range(cli_module.PARALLEL_FROM):
        body = f"from ray.air import session\nsession.report({{'i': {i}}})\n" if i % 4 == 0 else f"x = {i}\n"
        (tmp_path / f"m{i:03d}.py").write_text(body)
    assert cli_module.default_jobs(cli_module.PARALLEL_FROM - 1) == 1
    cores = len(os.sched_getaffinity(0))
    assert cli_module.default_jobs(10_000) == cores
    seen: list[int] = []
    real_run = cli_module.run
    monkeypatch.setattr(
        cli_module, "run", lambda plan, write, jobs, *rest: seen.append(jobs) or real_run(plan, write, jobs, *rest)
    )
    assert main(["--check", str(tmp_path)]) == 1
    assert seen == [min(cores, cli_module.PARALLEL_FROM // 50)]
    default = cli("--diff", "--report", "json", ".", cwd=tmp_path)
    one = cli("--diff", "--report", "json", "--jobs", "1", ".", cwd=tmp_path)
    assert default.stdout == one.stdout and json.loads(default.stdout)


def test_files_without_ray_are_not_parsed(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.py").write_text("def f(:\n")  # would not parse, but never mentions the library
    assert main([str(tmp_path)]) == 0
    assert "0 parsed" in capsys.readouterr().err


def test_newlines_and_bom_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "crlf.py"
    path.write_bytes(b"\xef\xbb\xbffrom ray.air import session\r\nsession.report({})\r\n")
    assert main(["--exit-zero", str(path)]) == 0  # a free-floating report stays flagged
    assert path.read_bytes() == b"\xef\xbb\xbffrom ray import train\r\ntrain.report({})\r\n"


def test_the_code_read_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    (tmp_path / "evil.py").write_text(f"import ray\nopen({str(marker)!r}, 'w').write('x')\n")
    assert main([str(tmp_path)]) == 0
    assert not marker.exists()


def test_usage_errors(tmp_path: Path, capsys) -> None:
    assert main([]) == 2
    assert main([str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["--list-rules"]) == 0


def test_a_crashing_rule_skips_only_that_file(tmp_path: Path, monkeypatch) -> None:
    from migrate.rules.session_calls import SessionCalls

    original = SessionCalls.fast  # these files take the rule's fast form (text edits)

    def crash(self, index):
        if "boom" in index.text:
            raise RuntimeError("simulated bug")
        return original(self, index)

    monkeypatch.setattr(SessionCalls, "fast", crash)
    (tmp_path / "a.py").write_text("from ray.air import session\nsession.report({'boom': 1})\n")
    (tmp_path / "b.py").write_text("from ray.air import session\nsession.report({'ok': 1})\n")
    assert main([str(tmp_path)]) == 2
    assert (tmp_path / "a.py").read_text().startswith("from ray.air import session")  # nothing written
    assert (tmp_path / "b.py").read_text() == "from ray import train\ntrain.report({'ok': 1})\n"


def test_a_file_only_libcst_refuses_is_a_parse_error_not_a_crash(tmp_path: Path, monkeypatch, capsys) -> None:
    # No input ast accepts and libcst refuses is known on Python 3.11, so libcst's refusal is
    # simulated: its parser raises its own error (from real invalid code) for this file.
    import libcst

    real = libcst.parse_module

    def refuse(text: str):
        return real("x = (\n" if "refused" in text else text)

    monkeypatch.setattr(libcst, "parse_module", refuse)
    # An import inside a function: the libcst form, not the fast one.
    (tmp_path / "a.py").write_text("def f():  # refused\n    from ray.air import session\n\n    session.report({})\n")
    assert main(["--check", str(tmp_path)]) == 1  # the file's problem (1), not the tool's (2)
    err = capsys.readouterr().err
    assert "a.py:1:1: ERROR does not parse (line 1, col 0)" in err and "crashed" not in err  # libcst's position


def test_a_notebook_cell_that_does_not_parse_is_reported_and_the_others_migrated(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["pip install ray[air]==2.2.0\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["from ray.air import session\n", "session.report({'a': 1})\n"]},
    ]  # fmt: skip
    notebook = tmp_path / "old.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    proc = cli("--report", "json", str(notebook), cwd=tmp_path)
    rows = json.loads(proc.stdout)
    (error,) = [r for r in rows if r["code"] == "ERROR"]
    assert error["message"].startswith("cell 1: does not parse") and error["line"] == 1
    after = json.loads(notebook.read_text())["cells"]
    assert after[0]["source"] == ["pip install ray[air]==2.2.0\n"]  # untouched
    assert after[1]["source"] == ["from ray import train\n", "train.report({'a': 1})\n"]  # migrated


def test_a_file_in_newer_syntax_says_which_python_to_run(tmp_path: Path, capsys) -> None:
    """A 3.12 `type` statement: migrated by a codemod running on 3.12+; on an older Python the
    file is skipped with an error that names the cause and what to do, not "does not parse"."""
    path = tmp_path / "new.py"
    path.write_text("from ray.air import session\n\ntype Metrics = dict[str, float]\n\nsession.report({})\n")
    code = main(["--exit-zero", str(path)])
    err = capsys.readouterr().err
    if sys.version_info >= (3, 12):
        assert code == 0 and "train.report({})" in path.read_text()
    else:
        assert "uses syntax newer than Python 3.1" in err and "python3.13 -m migrate" in err
        assert "does not parse" not in err and "session.report" in path.read_text()


def test_a_rewritten_flagged_line_is_reported_once_by_check_and_by_the_write(tmp_path: Path) -> None:
    """The rewrite turns `session.report` into `train.report` and adds an import above it:
    the finding on that line is the input's finding, moved, not a second one."""
    (tmp_path / "job.py").write_text(
        "from ray.air import session, ScalingConfig  # both\nsession.report({})\nScalingConfig()\n"
    )
    check = json.loads(cli("--check", "--output-format", "json", "job.py", cwd=tmp_path).stdout)
    assert [(r["code"], r["line"]) for r in check if not r["fixed"]] == [("RTM101", 2)]
    write = json.loads(cli("--output-format", "json", "job.py", cwd=tmp_path).stdout)
    flagged = [(r["code"], r["line"]) for r in write if not r["fixed"]]
    assert flagged == [("RTM101", 3)]  # the same finding, at its line in the rewritten file
    assert (tmp_path / "job.py").read_text().splitlines()[2] == "train.report({})"
