"""The codemod on public repositories no other test uses (tests/migrate/data/corpus.toml).

Their code is not committed here, and CI cannot fetch it, so this runs where the trees are on
disk: ``RAY_TRAIN_COMPAT_CORPUS=DIR`` with each repository at the commit the table names, as
``DIR/<owner>+<name>`` (for instance ``git --git-dir=<clone>/.git archive <commit> | tar -x -C
DIR/<owner>+<name>``). For each whole tree: every V1-era site found by reading it is reported
(rewritten or flagged) and nothing else is; ``--add-noqa`` then ``--check`` exits 0; a write
leaves files that parse with no new undefined name, and a second write changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.config import tomllib  # tomli on Python 3.10, as the codemod reads its settings
from tests.migrate.test_notebooks import undefined_names

TABLE = Path(__file__).parent / "data" / "corpus.toml"
REPOSITORIES = tomllib.loads(TABLE.read_text())["repository"]
ROOT = os.environ.get("RAY_TRAIN_COMPAT_CORPUS")


def _migrate(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrate", "--isolated", *args, "."], cwd=tree, capture_output=True, text=True
    )


def test_the_table_names_at_least_ten_repositories_each_at_a_commit() -> None:
    assert len(REPOSITORIES) >= 10
    for entry in REPOSITORIES:
        assert len(entry["commit"]) == 40 and "/" in entry["name"], entry
        assert set(entry.get("known_wrong", [])) <= set(entry["sites"]), entry["name"]


@pytest.mark.skipif(not ROOT, reason="RAY_TRAIN_COMPAT_CORPUS is not set: the public trees are not on disk")
@pytest.mark.parametrize("entry", REPOSITORIES, ids=[e["name"] for e in REPOSITORIES])
def test_a_public_tree_is_migrated_whole(entry: dict, tmp_path: Path) -> None:
    source = Path(ROOT or "") / entry["name"].replace("/", "+")
    if not source.is_dir():
        pytest.skip(f"{source} is not on disk (the table's commit {entry['commit'][:12]})")
    tree = tmp_path / "tree"
    shutil.copytree(source, tree)
    found = json.loads(_migrate(tree, "--check", "--output-format", "json").stdout or "[]")
    sites = {f"{f['file'].removeprefix('./')}:{f['line']} {f['code']}" for f in found}
    assert sites == set(entry["sites"]), (sites - set(entry["sites"]), set(entry["sites"]) - sites)

    baseline = tmp_path / "baseline"
    shutil.copytree(source, baseline)
    _migrate(baseline, "--add-noqa")
    check = _migrate(baseline, "--check")
    assert check.returncode == 0, check.stdout + check.stderr

    before = {p: undefined_names(p.read_text()) for p in tree.rglob("*.py")}
    _migrate(tree)  # the write
    for path, names in before.items():
        text = path.read_text()
        compile(text, str(path), "exec")
        assert undefined_names(text) <= names, (path, undefined_names(text) - names)
    written = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    _migrate(tree)
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == written, "a second write changed files"
