"""ruff's conventions, through the command line: `# noqa`, `[tool.ray-train-migrate]` in
pyproject.toml, and exit statuses a hook can act on."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from migrate.__main__ import main

FREE_FLOATING = """\
from ray import train


def f(config):
    train.report({"a": 1})
    train.report({"a": 2})  # noqa: RTM101
    train.report({"a": 3})  # NOQA
    train.report({"a": 4})  # noqa: E501, RTM101  (with another tool's code)
    train.report({"a": 5}, checkpoint=config["c"])  # noqa: RTM101
    train.report({"a": 6})  # noqa: RTM102
    text = "# noqa: RTM101 in a string suppresses nothing"; train.report({"a": 7})
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "migrate", *args], cwd=cwd, capture_output=True, text=True)


def rows(proc: subprocess.CompletedProcess[str]) -> list[tuple[str, int]]:
    return [(r["code"], r["line"]) for r in json.loads(proc.stdout)]


def test_noqa_suppresses_the_named_codes_on_its_line_and_reports_unused_ones(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(FREE_FLOATING)
    proc = cli("--check", "--output-format", "json", "job.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert rows(proc) == [
        ("RTM101", 5),  # no comment
        ("RTM900", 9),  # nothing on the line is RTM101: the directive is unused
        ("RTM101", 10),  # RTM102 does not cover RTM101...
        ("RTM900", 10),  # ...and is itself unused there
        ("RTM101", 11),  # in a string, not a comment
    ]
    text = cli("--check", "job.py", cwd=tmp_path).stderr
    assert "5 flagged (RTM101: 3, RTM900: 2), 3 suppressed by noqa" in text


def test_unused_noqa_is_only_reported_for_rules_that_ran(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text("from ray import train\n\ntrain.report({'a': 1}, checkpoint=c)  # noqa: RTM101\n")
    assert rows(cli("--check", "--output-format", "json", "--select", "RTM9", "job.py", cwd=tmp_path)) == []
    assert rows(cli("--check", "--output-format", "json", "job.py", cwd=tmp_path)) == [("RTM900", 3)]
    assert rows(cli("--check", "--output-format", "json", "--ignore", "RTM900", "job.py", cwd=tmp_path)) == []


def test_noqa_in_a_notebook_cell(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": src}
        for src in (["from ray import train"], ["def f(c):\n", "    train.report({'a': 1})  # noqa: RTM101\n",
                                                 "    train.report({'a': 2})"])
    ]  # fmt: skip
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    proc = cli("--check", "--output-format", "json", "nb.ipynb", cwd=tmp_path)
    (row,) = json.loads(proc.stdout)
    assert (row["code"], row["line"]) == ("RTM101", 3) and row["message"].startswith("cell 2: ")


def test_a_write_that_leaves_flags_exits_1_and_exit_zero_says_0(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text("from ray.air import session\n\n\ndef f(c):\n    session.report({'a': 1})\n")
    first = cli("job.py", cwd=tmp_path)
    assert first.returncode == 1, first.stderr  # rewritten, but the free-floating report needs a person
    assert "train.report" in job.read_text()
    assert cli("--exit-zero", "job.py", cwd=tmp_path).returncode == 0
    job.write_text("from ray.air import session\n\n\ndef f(c):\n    session.report({'a': 1}, checkpoint=c)\n")
    assert cli("job.py", cwd=tmp_path).returncode == 0  # all rewritten, nothing left: done
    assert cli("--check", "job.py", cwd=tmp_path).returncode == 0
    assert cli("--exit-zero", "--select", "RTM999", "job.py", cwd=tmp_path).returncode == 2  # usage errors stay 2


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n" + textwrap.dedent(table))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "job.py").write_text(
        "from ray.air import session\n\n\ndef f(c):\n    session.report({'a': 1})\n    session.get_trial_name()\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_job.py").write_text(
        "from ray import train\n\n\ndef f(c):\n    train.report({'a': 1})\n"
    )
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text("from ray import train\n\n\ndef f(c):\n    train.report({'a': 1})\n")
    return tmp_path


TABLE = """\
[tool.ray-train-migrate]
target = "compat"
ignore = ["RTM111"]
exclude = ["legacy"]
output-format = "json"

[tool.ray-train-migrate.per-file-ignores]
"tests/*" = ["RTM101"]
"""


def test_pyproject_settings_apply_and_flags_win(tmp_path: Path) -> None:
    root = project(tmp_path, TABLE)
    proc = cli("--diff", ".", cwd=root)  # output-format json: no diff text, rows
    found = {(Path(r["file"]).name, r["code"]) for r in json.loads(proc.stdout)}
    assert ("job.py", "RTM004") in found  # target = compat
    assert ("job.py", "RTM101") in found
    assert not any(code == "RTM111" for _, code in found)  # ignore
    assert not any(name == "test_job.py" and code == "RTM101" for name, code in found)  # per-file-ignores
    assert not any(name == "old.py" for name, _ in found)  # exclude
    # Flags on the command line win over the file.
    flags = cli(
        "--diff", "--output-format", "text", "--target", "ray", "--ignore", "", "--exclude", "none", ".", cwd=root
    )
    assert "RTM111" in flags.stdout and "legacy/old.py" in flags.stdout and "import compat" not in flags.stdout
    assert "RTM101" not in [line for line in flags.stdout.splitlines() if "tests/test_job.py" in line]  # still per-file
    # --isolated: no configuration at all.
    isolated = cli("--diff", "--isolated", ".", cwd=root)
    assert "@@" in isolated.stdout and "legacy/old.py" in isolated.stdout


def test_the_nearest_pyproject_with_the_table_wins(tmp_path: Path) -> None:
    root = project(tmp_path, TABLE)
    sub = root / "src"
    (sub / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")  # no table: passed over
    assert "+import compat as train" in cli("--diff", "--output-format", "text", "job.py", cwd=sub).stdout
    (sub / "pyproject.toml").write_text("[tool.ray-train-migrate]\nselect = ['RTM111']\n")
    proc = cli("--check", "--output-format", "text", "job.py", cwd=sub)
    assert "RTM111" in proc.stdout and "RTM101" not in proc.stdout


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            "[tool.ray-train-migrate]\nselct = ['RTM1']\n",
            "unknown key 'selct' (did you mean 'select'?); accepted keys:",
        ),
        ("[tool.ray-train-migrate]\ntarget = 'v2'\n", "'target' is 'v2'; accepted values: ray, compat, native"),
        ("[tool.ray-train-migrate]\nignore = 'RTM101'\n", "'ignore' must be a list of strings"),
        ("[tool.ray-train-migrate]\nselect = ['RTM5']\n", "'select': unknown rule code 'RTM5'"),
        ("[tool.ray-train-migrate]\noutput-format = 'xml'\n", "accepted values: text, json, github, sarif"),
        ("[tool.ray-train-migrate.per-file-ignores]\n'a.py' = ['XYZ1']\n", "unknown rule code 'XYZ1'"),
        ("[tool.ray-train-migrate\n", "not valid TOML"),
    ],
)
def test_a_bad_configuration_is_a_usage_error_naming_the_key(tmp_path: Path, table: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(table)
    (tmp_path / "job.py").write_text("from ray import train\n")
    proc = cli("--check", "job.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr and "pyproject.toml" in proc.stderr, proc.stderr


def test_force_exclude_applies_exclusions_to_named_files(tmp_path: Path, capsys) -> None:
    root = project(tmp_path, TABLE)
    old = str(root / "legacy" / "old.py")
    assert main(["--check", "--output-format", "text", old]) == 1  # named: processed, as ruff does
    capsys.readouterr()
    assert main(["--check", "--force-exclude", "--output-format", "text", old]) == 0  # pre-commit's way
