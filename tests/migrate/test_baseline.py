"""Severity on every finding, ``--fail-on``, ``--statistics`` and ``--add-noqa``, through the
command line as a team adopting the codemod in CI runs it."""

from __future__ import annotations

import json
import re
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
    after = (tmp_path / "job.py").read_bytes().decode()
    assert after == MARKED.replace("\n", "\r\n")  # line endings kept; the string and the continuation
    compile(after, "job.py", "exec")  # end where their comment can go
    again = cli("--add-noqa", "job.py", cwd=tmp_path)
    assert "Added 0 noqa directive(s)" in again.stderr and (tmp_path / "job.py").read_bytes().decode() == after
    gate = cli("--check", "job.py", cwd=tmp_path)
    assert gate.returncode == 0 and "[fix]" not in gate.stdout  # the baseline holds, rewrites included:
    # the bare directive on session.report stops its rewrite there, as ruff's stops a fix
    assert "0 would be rewritten" in gate.stderr and "7 suppressed by noqa" in gate.stderr


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


def test_a_noqa_stops_its_rules_rewrite_on_its_line_and_the_rest_is_rewritten() -> None:
    """As ruff's `# noqa` stops its fix: the line a library needs kept stays as it is."""
    from tests.migrate.conftest import migrate

    out, found = migrate(
        """\
        from ray import train


        def loop(config):
            train.report(loss=1.0)  # noqa: RTM009 -- a wrapper of ours reads keywords
            train.report(acc=2.0)
        """
    )
    assert "train.report(loss=1.0)  # noqa: RTM009" in out and 'train.report({"acc": 2.0})' in out
    shown = [(d.code, d.line, d.fixed) for d in found if d.code == "RTM009" and not d.suppressed]
    assert shown == [("RTM009", 6, True)]


def test_a_held_line_other_changes_need_holds_the_rule_for_the_file_and_says_why() -> None:
    """Keeping `session.report` while the import it reads is rewritten away would break the
    file: the rule changes nothing, and its other findings say which directive holds it."""
    from tests.migrate.conftest import migrate

    source = (
        "from ray.air import session\n\n\ndef loop(config):\n"
        "    session.report({'a': 1})  # noqa: RTM002\n    rank = session.get_world_rank()\n"
    )
    out, found = migrate(source)
    assert out.splitlines() == [line.strip() if not line.startswith(" ") else line for line in source.splitlines()]
    compile(out, "job.py", "exec")
    (other,) = [d for d in found if d.code == "RTM002" and not d.suppressed]
    assert other.line == 6 and not other.fixed
    assert "(not applied: `# noqa: RTM002` on line 5 holds a line this rewrite depends on)" in other.message


def test_add_noqa_then_check_passes_on_a_real_tree_and_the_next_v1_call_fails_it(tmp_path: Path) -> None:
    """Ray's own train and Tune examples and this project's V1-era programs: marked, the tree
    checks clean (rewrites included), only comments were added, and a new V1 call fails CI."""
    import shutil

    ray = pytest.importorskip("ray", reason="the tree is Ray's own examples: the codemod-only install has no Ray")
    root = Path(ray.__file__).parent
    shutil.copytree(root / "train" / "examples", tmp_path / "train_examples")
    shutil.copytree(root / "tune" / "examples", tmp_path / "tune_examples")
    tests = Path(__file__).resolve().parents[1]
    for program in [*(tests / "compat" / "v1_era").glob("*.py"), *(tests / "migrate" / "data").glob("*.py")]:
        shutil.copy(program, tmp_path / program.name)
    before = {p: p.read_text() for p in tmp_path.rglob("*.py")}
    assert cli("--check", ".", cwd=tmp_path).returncode == 1
    marking = cli("--add-noqa", ".", cwd=tmp_path)
    assert marking.returncode == 0, marking.stderr
    gate = cli("--check", ".", cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout[-3000:]
    assert "0 would be rewritten" in gate.stderr
    for path, text in before.items():  # nothing but directives added
        after = path.read_text().splitlines()
        assert [re.sub(r"\s*#\s*noqa: [A-Z0-9, ]+$", "", line) for line in after] == [
            re.sub(r"\s*#\s*noqa: [A-Z0-9, ]+$", "", line) for line in text.splitlines()
        ], path
    (tmp_path / "new_job.py").write_text("from ray.air import session\nsession.report({'loss': 1.0})\n")
    assert cli("--check", ".", cwd=tmp_path).returncode == 1


def test_unparsed_notebook_cells_are_ignored_per_file_as_ruff_ignores_codes(tmp_path: Path) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook = {
        "cells": [{**cell, "source": ["from ray import train\n", "train.report({'a': 1}, checkpoint=c)\n"]},
                  {**cell, "source": ["%%bash\n", "echo (\n"]}],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
    }  # fmt: skip
    (tmp_path / "sweep.ipynb").write_text(json.dumps(notebook))
    assert cli("--check", ".", cwd=tmp_path).returncode == 1
    marking = cli("--add-noqa", ".", cwd=tmp_path)  # the cell cannot carry a directive: the config records it
    assert marking.returncode == 0, marking.stderr
    assert 'per-file-ignores = ["ERROR"] in' in marking.stderr
    recorded = '[tool.ray-train-migrate.per-file-ignores]\n"sweep.ipynb" = ["ERROR"]\n'
    assert (tmp_path / "pyproject.toml").read_text() == recorded
    gate = cli("--check", ".", cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout


# --- the baseline on real trees: generated files, notebooks with large outputs, files that do not parse


def _real_tree(root: Path) -> None:
    """What public repositories hold: a generated file over the size limit that never names Ray (a
    protobuf module), one that does, a notebook whose stored outputs are over the limit (its code
    is Ray code), a notebook with YAML pasted into a cell, a file that does not parse, and a
    pyproject.toml of the project's own (another tool's table, kept as it is)."""
    (root / "gen").mkdir()
    rows = "".join(f"    {i},\n" for i in range(60000))
    (root / "gen" / "features_pb2.py").write_text(f"X = [\n{rows}]\n")
    (root / "gen" / "big_ray.py").write_text(f"from ray.air import session\nX = [\n{rows}]\n")
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1}
    output = {"output_type": "stream", "name": "stdout", "text": ["x" * 1000 + "\n"] * 800}
    notebook = {
        "cells": [
            {**cell, "source": ["from ray.air import session\n", "def f(config):\n", "    session.report({'a': 1})\n"],
             "outputs": [output]},
            {**cell, "source": ["name: sweep\n", "  key: [value\n"], "outputs": []},
            {**cell, "source": ["from ray import train\n", "n = train.world_size()\n"], "outputs": []},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }  # fmt: skip
    (root / "sweep.ipynb").write_text(json.dumps(notebook))
    (root / "broken.py").write_text("import ray.train\ndef f(:\n")
    (root / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")


def test_a_large_file_that_never_names_ray_is_no_error_and_a_notebook_is_measured_by_its_code(tmp_path: Path) -> None:
    _real_tree(tmp_path)
    found = cli("--check", "--output-format", "json", ".", cwd=tmp_path)
    findings = json.loads(found.stdout)
    errors = sorted(f["file"] for f in findings if f["code"] == "ERROR")
    # the protobuf module is read (a substring scan) and never parsed: no error; the notebook's code
    # is read although its outputs are over the limit: its findings are there
    assert errors == ["./broken.py", "./gen/big_ray.py", "./sweep.ipynb"], errors
    assert {f["code"] for f in findings if f["file"] == "./sweep.ipynb"} >= {"RTM002", "RTM128", "ERROR"}


def test_check_right_after_add_noqa_passes_on_a_real_tree_and_the_projects_config_is_kept(tmp_path: Path) -> None:
    _real_tree(tmp_path)
    marking = cli("--add-noqa", ".", cwd=tmp_path)
    assert marking.returncode == 0, marking.stderr
    config = (tmp_path / "pyproject.toml").read_text()
    assert config.startswith("[tool.black]\nline-length = 100\n"), config  # the project's own table kept
    assert '"gen/big_ray.py" = ["ERROR"]' in config and '"sweep.ipynb" = ["ERROR"]' in config
    gate = cli("--check", ".", cwd=tmp_path)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert cli("--add-noqa", ".", cwd=tmp_path).returncode == 0 and (tmp_path / "pyproject.toml").read_text() == config


def test_add_noqa_extends_an_existing_per_file_ignores_entry_and_gives_up_on_an_inline_table(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import ray.train\ndef f(:\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ray-train-migrate]\nselect = ["RTM"]\n\n'
        '[tool.ray-train-migrate.per-file-ignores]\n"broken.py" = ["RTM101"]\n'
    )
    assert cli("--add-noqa", ".", cwd=tmp_path).returncode == 0
    assert '"broken.py" = ["RTM101", "ERROR"]' in (tmp_path / "pyproject.toml").read_text()
    assert cli("--check", ".", cwd=tmp_path).returncode == 0
    inline = '[tool.ray-train-migrate]\nper-file-ignores = { "other.py" = ["RTM101"] }\n'
    (tmp_path / "pyproject.toml").write_text(inline)
    marking = cli("--add-noqa", ".", cwd=tmp_path)
    assert marking.returncode == 1 and '"broken.py" = ["ERROR"]' in marking.stderr  # says what to add
    assert (tmp_path / "pyproject.toml").read_text() == inline  # not edited
