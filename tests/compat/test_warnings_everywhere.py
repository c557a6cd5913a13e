"""compat's warnings behave as ``warnings.warn`` from every way users start Python: a file,
``python -c``, stdin, ``python -i`` and a Jupyter kernel (a real one: ipykernel, run by
nbclient). Two warnings go through compat's attribution to the user's line: the untested-release
warning ``import compat`` gives on a Ray newer than the tested range (the installed Ray's
version is reported as 2.61.0 to the program), and a V1-only warning (``can_restore`` under V2).
Each is printed once, at the user's line, and Python's filters (``-W error``) apply there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.one_pass  # no Ray cluster; does not depend on the starting setting

PROGRAM = """\
import importlib.metadata as _metadata
_version = _metadata.version
_metadata.version = lambda name: "2.61.0" if name == "ray" else _version(name)
import compat
import os
os.environ["RAY_TRAIN_V2_ENABLED"] = "1"
for _ in range(3):
    compat.DataParallelTrainer.can_restore("/nonexistent/run")

print("finished")
"""
UNTESTED_LINE, V1_ONLY_LINE = 4, 8  # the user's lines each warning belongs to

WAYS = {
    "file": lambda path: ([sys.executable, str(path)], None),
    "-c": lambda path: ([sys.executable, "-c", PROGRAM], None),
    "stdin": lambda path: ([sys.executable, "-"], PROGRAM),
    "-i": lambda path: ([sys.executable, "-i"], PROGRAM),
}


def _run(way: str, tmp_path: Path, warnings_option: str | None = None) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "job.py"
    script.write_text(PROGRAM)
    argv, stdin = WAYS[way](script)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    if warnings_option:
        env["PYTHONWARNINGS"] = warnings_option
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)


@pytest.mark.parametrize("way", list(WAYS))
def test_each_warning_is_printed_once_at_the_users_line(way: str, tmp_path: Path) -> None:
    run = _run(way, tmp_path)
    assert run.returncode == 0, run.stderr
    assert "finished" in run.stdout
    assert "ImportError" not in run.stderr
    lines = run.stderr.splitlines()
    untested = [line for line in lines if "UntestedRayWarning: ray 2.61.0 is newer" in line]
    v1_only = [line for line in lines if "V1OnlyWarning: [restore]" in line]
    assert len(untested) == 1 and len(v1_only) == 1, run.stderr  # once, though called three times
    if way != "-i":  # the interactive prompt numbers each statement from 1
        assert f":{UNTESTED_LINE}: UntestedRayWarning" in untested[0]
        assert f":{V1_ONLY_LINE}: V1OnlyWarning" in v1_only[0]
    filename = str(tmp_path / "job.py") if way == "file" else "<string>" if way == "-c" else "<stdin>"
    assert f"{filename}:" in untested[0] and f"{filename}:" in v1_only[0]  # after -i's prompts


@pytest.mark.parametrize("way", list(WAYS))
def test_warning_filters_apply_at_the_users_line(way: str, tmp_path: Path) -> None:
    """``-W error`` for the user's own module (``__main__``) turns each into its exception;
    ``-W ignore`` silences both (from a file)."""
    stops = way != "-i"  # the interactive prompt goes on after an exception
    as_error = _run(way, tmp_path, "error::UserWarning:__main__")
    assert "Traceback" in as_error.stderr and "UntestedRayWarning: ray 2.61.0 is newer" in as_error.stderr
    assert ("finished" in as_error.stdout) is not stops
    v1_error = _run(way, tmp_path, "default::UserWarning,error::DeprecationWarning:__main__")
    assert "Traceback" in v1_error.stderr and "V1OnlyWarning: [restore]" in v1_error.stderr
    assert ("finished" in v1_error.stdout) is not stops
    if way == "file":  # the same filter machinery for every way: once is enough
        quiet = _run(way, tmp_path, "ignore::UserWarning:__main__,ignore::DeprecationWarning:__main__")
        assert quiet.returncode == 0 and "finished" in quiet.stdout
        assert "Warning" not in quiet.stderr, quiet.stderr


def test_in_a_jupyter_kernel(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    imports, _, loop = PROGRAM.partition("import os\n")
    cells = [
        imports,  # the untested-release warning, at `import compat`
        "import os\n" + loop.replace('print("finished")\n', ""),  # the V1-only warning, once
        'import warnings\nwarnings.simplefilter("error")\nfrom compat_core import installed\ninstalled.check("2.61.0")',
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()

    def stderr(cell) -> list[str]:
        return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr").splitlines()

    untested = [line for line in stderr(notebook.cells[0]) if "UntestedRayWarning: ray 2.61.0 is newer" in line]
    assert len(untested) == 1 and f":{UNTESTED_LINE}: UntestedRayWarning" in untested[0], notebook.cells[0].outputs
    v1_only = [line for line in stderr(notebook.cells[1]) if "V1OnlyWarning: [restore]" in line]
    assert len(v1_only) == 1, notebook.cells[1].outputs
    assert f":{V1_ONLY_LINE - UNTESTED_LINE}: V1OnlyWarning" in v1_only[0]  # the line in its cell
    assert not any(o.get("output_type") == "error" for o in notebook.cells[1].outputs)
    # A filter set in the kernel applies at the cell's line: the warning is raised.
    [error] = [o for o in notebook.cells[2].outputs if o.get("output_type") == "error"]
    assert error["ename"] == "UntestedRayWarning"


def test_each_package_of_compat_marks_its_own_frames_as_library_code() -> None:
    """The core knows no directory of the layers above it: the public package and each engine
    register themselves with ``compat_core.migration.where`` when imported; until then their frames would
    be the user's. ``compat.testing`` (it replays the user's schedules) stays the user's."""
    script = (
        "import os, sys\n"
        "from compat_core.migration import where\n"
        "root = os.path.dirname(os.path.dirname(os.path.dirname(where.__file__)))\n"
        "api, engine = os.path.join(root, 'compat', '_api.py'), os.path.join(root, 'v2', 'worker.py')\n"
        "before = where.is_library(api), where.is_library(engine), where.is_library(where.__file__)\n"
        "import compat, compat.testing, v2\n"
        "after = where.is_library(api), where.is_library(engine), where.is_library(compat.testing.__file__)\n"
        "print(before, after, where.is_library(os.path.abspath('train.py')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "(False, False, True) (True, True, False) False"
