"""The docs are tests: every Python and shell block in README.md and docs/*.md, run as written.

Each fenced ``python``/``bash`` block is read with the marker on the line before it, an HTML
comment the rendered page does not show:

- ``<!-- docs-test: program; ... -->``, or no marker on a Python block: a complete program. It
  runs as ``python <file>`` in a fresh directory under ``RAY_TRAIN_V2_ENABLED=0`` and ``=1``
  (``modes: one``: once; ``runner: pytest``: as a pytest module), unless ``run by: the next
  block``, whose commands run it. ``stand-in: TEXT`` fills its first ``...`` placeholder;
  ``save as: NAME`` names its file.
- ``<!-- docs-test: run; ... -->``: a shell block whose commands run, one at a time, in one
  fresh directory (holding the program before it and the ``files:`` from tests/docs/stand_ins,
  ``name=source`` to rename one), each expected to exit with the status ``exit:`` gives (0 if
  not given).
- ``<!-- docs-test: fragment ... -->`` / ``<!-- docs-test: not run: why -->``: skipped, and the
  marker says so; a shell block must carry one of the markers. A file-level
  ``<!-- docs-test: fragments: why -->`` marks every block of that file.

Every run is a user's: its own process and Ray cluster, ``HOME`` in the test's directory (Ray's
``~/ray_results`` there), no ``PYTHONPATH``, no ``RAY_TRAIN_V2_ENABLED`` unless the command sets
it; in CI's second pass ``COMPAT_V1_ENGINE=v2`` is inherited, so the V1 runs go again on Ray's V2
engine. No run may print a Ray deprecation warning (compat must not cause one; none of the docs'
programs uses a deprecated option), and Ray's deprecations that compat could cause are errors
in every process of the run (``PYTHONWARNINGS``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAND_INS = Path(__file__).resolve().parent / "docs" / "stand_ins"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"python": "python", "py": "python", "bash": "shell", "sh": "shell", "console": "shell", "shell": "shell"}
MARKER = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
# Ray's deprecations compat could cause (trainer_resources, resume_from_checkpoint, the Tune
# Checkpoint class), raised as errors in every process of a run: the driver's environment is
# inherited by the cluster it starts.
RAY_DEPRECATIONS_AS_ERRORS = ",".join(
    f"error::DeprecationWarning:{module}"
    for module in ("ray.train.base_trainer", "ray.tune.trainable.trainable_fn_utils", "ray.train.utils")
)


@dataclass
class Block:
    doc: Path
    line: int  # the fence's line, 1-based
    kind: str  # "python" or "shell"
    code: str
    marker: str | None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.doc.name}:{self.line}"

    @property
    def verb(self) -> str:
        return (self.marker or ("program" if self.kind == "python" else "")).split(";")[0].split(":")[0].strip()


def _parse_options(marker: str) -> dict[str, str]:
    options = {}
    for part in marker.split(";")[1:]:
        key, _, value = part.partition(":")
        options[key.strip()] = value.strip()
    return options


def collect(doc: Path) -> list[Block]:
    lines = doc.read_text().splitlines()
    heading = [m.group(1) for line in lines[:5] if (m := MARKER.search(line))]
    file_marker = next((m for m in heading if m.startswith("fragments")), None)
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        indent, lang = fence.groups()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        kind = RUNNABLE.get(lang)
        if kind is not None:
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            found = MARKER.search(before)
            marker = found.group(1) if found else file_marker
            code = "\n".join(line[len(indent) :] for line in lines[i + 1 : end]) + "\n"
            blocks.append(Block(doc, i + 1, kind, code, marker, _parse_options(marker or "")))
        i = end + 1
    return blocks


BLOCKS = [block for doc in DOCS for block in collect(doc)]
SKIPPED = ("fragment", "fragments", "not run")


def _programs() -> list[tuple[Block, str]]:
    cases = []
    for block in BLOCKS:
        if block.kind != "python" or block.verb != "program" or "run by" in block.options:
            continue
        settings = ["1"] if block.options.get("modes") == "one" else ["0", "1"]
        cases += [pytest.param(block, setting, id=f"{block.id}-{setting}") for setting in settings]  # v1_case: conftest
    return cases


def _commands() -> list[tuple[Block, int]]:
    cases = []
    for block in BLOCKS:
        if block.kind == "shell" and block.verb == "run":
            for k, line in enumerate(_command_lines(block)):
                # A V1 command runs again in CI's second pass (v1 on Ray's V2 engine).
                again = "RAY_TRAIN_V2_ENABLED=0" in line and "COMPAT_V1_ENGINE" not in line
                v1 = [pytest.mark.v1_case] if again else []
                cases.append(pytest.param(block, k, id=f"{block.id}-{k + 1}", marks=v1))
    return cases


def _command_lines(block: Block) -> list[str]:
    return [line.split("  #")[0].strip() for line in block.code.splitlines() if line.strip()]


def _program_source(block: Block) -> str:
    code = block.code
    if "stand-in" in block.options:
        code = code.replace("...", block.options["stand-in"], 1)
    return code


def _program_before(block: Block) -> Block | None:
    earlier = [b for b in BLOCKS if b.doc == block.doc and b.line < block.line]
    return earlier[-1] if earlier and earlier[-1].options.get("run by") == "the next block" else None


def _environment(tmp_path: Path, setting: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS", "RAY_TRAIN_V2_ENABLED")}
    (tmp_path / "home").mkdir(exist_ok=True)
    env["HOME"] = str(tmp_path / "home")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONWARNINGS"] = RAY_DEPRECATIONS_AS_ERRORS
    if setting is not None:
        env["RAY_TRAIN_V2_ENABLED"] = setting
    return env


def _check_output(run: subprocess.CompletedProcess[str], expected_exit: int, what: str) -> None:
    output = run.stdout + run.stderr
    assert run.returncode == expected_exit, f"{what}: exit {run.returncode}, expected {expected_exit}\n{output[-6000:]}"
    assert "RayDeprecationWarning" not in output, f"{what} printed a Ray deprecation warning:\n{output[-6000:]}"


def test_every_block_is_collected_and_every_shell_block_says_whether_it_runs() -> None:
    assert {b.doc.name for b in BLOCKS} >= {"README.md", "compatibility.md", "migrate.md", "testing.md"}
    unmarked = [b.id for b in BLOCKS if b.kind == "shell" and b.verb not in ("run", *SKIPPED)]
    assert not unmarked, f"shell blocks without a docs-test marker (run, or not run: why): {unmarked}"
    unknown = [b.id for b in BLOCKS if b.verb not in ("program", "run", *SKIPPED)]
    assert not unknown, f"unknown docs-test markers: {unknown}"
    silent = [b.id for b in BLOCKS if b.verb == "not run" and not b.marker.partition("not run:")[2].strip()]
    assert not silent, f"'not run' needs a reason: {silent}"
    readme = [b for b in BLOCKS if b.doc.name == "README.md" and b.kind == "python"]
    assert readme and readme[0].verb == "program"  # the first thing a new user runs


def test_the_collector_reads_markers_placeholders_and_indented_blocks(tmp_path: Path) -> None:
    doc = tmp_path / "page.md"
    doc.write_text(
        "<!-- docs-test: program; stand-in: 2; save as: job.py; run by: the next block -->\n"
        "```python\nx = ...\n```\n\n<!-- docs-test: run; exit: 0 1 -->\n```bash\npython job.py   # ok\n"
        "false\n```\n1. step\n\n   ```bash\n   echo hi\n   ```\n\n```python\nfragment(\n```\n"
    )
    program, commands, indented, bare = collect(doc)
    assert _program_source(program) == "x = 2\n" and program.options["save as"] == "job.py"
    assert _command_lines(commands) == ["python job.py", "false"] and commands.options["exit"] == "0 1"
    assert indented.code == "echo hi\n" and indented.verb == ""  # unmarked shell: the first test names it
    assert bare.verb == "program"  # an unmarked Python block is a program: a fragment must say so


def _run_program(block: Block, directory: Path, env: dict[str, str], setting: str) -> None:
    name = block.options.get("save as", "program.py")
    (directory / name).write_text(_program_source(block))
    if block.options.get("runner") == "pytest":
        env["PYTHONPATH"] = str(ROOT)  # the docs' test imports the repository's examples
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name]
    else:
        argv = [sys.executable, name]
    run = subprocess.run(argv, cwd=directory, env=env, capture_output=True, text=True, timeout=900)
    _check_output(run, 0, f"{block.id} under RAY_TRAIN_V2_ENABLED={setting}")


@pytest.mark.ray
@pytest.mark.one_pass  # both settings here; the second pass reruns the V1 case (conftest)
@pytest.mark.parametrize(("block", "setting"), _programs())
def test_program(block: Block, setting: str, tmp_path: Path) -> None:
    _run_program(block, tmp_path, _environment(tmp_path, setting), setting)


def _stage(block: Block, directory: Path) -> None:
    """The run's directory: the program the block runs, and its stand-in files."""
    program = _program_before(block)
    if program is not None:
        (directory / program.options.get("save as", "program.py")).write_text(_program_source(program))
    for item in filter(None, (s.strip() for s in block.options.get("files", "").split(","))):
        name, _, source = item.partition("=")
        source_path = STAND_INS / (source or name)
        if source_path.is_dir():
            shutil.copytree(source_path, directory / name)
        else:
            shutil.copy(source_path, directory / name)


@pytest.mark.ray
@pytest.mark.one_pass
@pytest.mark.parametrize(("block", "index"), _commands())
def test_commands(block: Block, index: int, tmp_path: Path) -> None:
    """A command of the block, in a directory staged for it; with ``sequence`` (the codemod's
    steps) the block's earlier commands run first, each with its expected exit status."""
    lines = _command_lines(block)
    exits = [int(e) for e in block.options.get("exit", "").split()] or [0] * len(lines)
    assert len(exits) == len(lines), f"{block.id}: 'exit:' gives {len(exits)} statuses for {len(lines)} commands"
    _stage(block, tmp_path)
    env = _environment(tmp_path, None)
    first = 0 if "sequence" in block.options else index
    for k in range(first, index + 1):
        run = subprocess.run(
            ["bash", "-c", lines[k]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
        )
        _check_output(run, exits[k], f"{block.id}: `{lines[k]}`")
    words = shlex.split(lines[index])
    if "--html" in words:  # the report the command names
        html = tmp_path / words[words.index("--html") + 1]
        assert html.is_file() and "<html" in html.read_text()[:2000].lower()
