"""A notebook's code cells are one module: names resolve across cells, in cell order."""

from __future__ import annotations

import json
from pathlib import Path

import pyflakes.api
import pyflakes.messages
import pyflakes.reporter
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate import engine
from tests.properties.programs import v1_programs

TARGETS = ["ray", "compat", "native"]


def code(*lines: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": list(lines)}


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": [text]}


def write_notebook(path: Path, cells: list[dict]) -> Path:
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    return path


def sources(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]


def python_of(path: Path) -> str:
    """The code cells as the kernel runs them, magics and shell lines left out."""
    lines = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            lines += [line for line in "".join(cell["source"]).splitlines() if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines) + "\n"


class _Collect(pyflakes.reporter.Reporter):
    def __init__(self) -> None:
        self.messages: list[pyflakes.messages.Message] = []

    def flake(self, message: pyflakes.messages.Message) -> None:
        self.messages.append(message)

    def syntaxError(self, *args: object) -> None:  # noqa: N802 (pyflakes' name)
        raise AssertionError(f"does not parse: {args}")


def undefined_names(source: str) -> set[str]:
    """Names the code uses and never defines (pyflakes: a NameError when it runs)."""
    reporter = _Collect()
    pyflakes.api.check(source, "<notebook>", reporter)
    return {m.message_args[0] for m in reporter.messages if isinstance(m, pyflakes.messages.UndefinedName)}


CELLS = [
    code(
        "from ray.air.config import ScalingConfig\n",
        "from ray.air import session\n",
        "from ray.train.torch import TorchTrainer",
    ),
    markdown("# Training"),
    code("%pip install -q 'ray[train]'\n", "!nproc"),
    code("def train_func(config):\n", "    for epoch in range(2):\n", "        session.report({'epoch': epoch})"),
    code("trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2))\n", "result = trainer.fit()"),
]


@pytest.mark.parametrize("write", [False, True], ids=["diff", "write"])
def test_imports_in_the_first_cell_serve_every_later_cell(tmp_path: Path, write: bool) -> None:
    path = write_notebook(tmp_path / "train.ipynb", CELLS)
    result = engine.process_file(str(path), [r.code for r in engine.select_rules()], "ray", write=write)
    assert result.error is None
    if not write:
        path.write_text(result.new_text or "")
    after = sources(path)
    assert (
        after[0]
        == "from ray.train import ScalingConfig\nfrom ray import train\nfrom ray.train.torch import TorchTrainer"
    )
    assert after[1:3] == ["# Training", "%pip install -q 'ray[train]'\n!nproc"]  # markdown and magics as they were
    assert "train.report({'epoch': epoch})" in after[3]
    assert after[4] == "".join(CELLS[4]["source"])
    assert undefined_names(python_of(path)) == set()
    (flag,) = [d for d in result.diagnostics if d.code == "RTM101"]
    assert flag.message.startswith("cell 4: ") and flag.line == 3  # the report's own cell and line in it


@pytest.mark.parametrize("target", TARGETS)
def test_a_migrated_notebook_defines_every_name_it_uses(tmp_path: Path, target: str) -> None:
    path = write_notebook(tmp_path / "train.ipynb", CELLS)
    assert undefined_names(python_of(path)) == set()
    codes = [r.code for r in engine.select_rules(target=target)]
    assert engine.process_file(str(path), codes, target, write=True).error is None
    assert undefined_names(python_of(path)) == set()
    assert not engine.process_file(str(path), codes, target, write=True).changed  # one write reaches the fixed point


def test_a_cell_that_does_not_parse_is_left_alone_and_the_others_share_one_namespace(tmp_path: Path) -> None:
    cells = [
        code("from ray.air import session\n", "from ray.air.config import RunConfig"),
        code("pip install ray[air]==2.2.0"),  # automagic: not Python
        code("def f(config):\n", "    session.report({'a': 1})"),
        code("config = RunConfig(name='x')"),
    ]
    path = write_notebook(tmp_path / "nb.ipynb", cells)
    result = engine.process_file(str(path), [r.code for r in engine.select_rules()], "ray", write=True)
    (error,) = [d for d in result.diagnostics if d.code == "ERROR"]
    assert error.message.startswith("cell 2: does not parse") and error.line == 1
    after = sources(path)
    assert after[0] == "from ray import train\nfrom ray.train import RunConfig"
    assert after[1] == "pip install ray[air]==2.2.0"
    assert after[2] == "def f(config):\n    train.report({'a': 1})"
    assert after[3] == "config = RunConfig(name='x')"


def test_a_use_in_a_later_cell_is_flagged_at_its_own_cell(tmp_path: Path) -> None:
    cells = [code("from ray.air import session\n", "import ray"), code("x = 1\n", "s = session")]
    path = write_notebook(tmp_path / "nb.ipynb", cells)
    result = engine.process_file(str(path), [r.code for r in engine.select_rules()], "ray", write=False)
    (flag,) = [d for d in result.diagnostics if d.code == "RTM100"]
    assert flag.message.startswith("cell 2: ") and flag.line == 2
    assert not result.changed  # the session object is still used as a value: its import stays


@st.composite
def notebooks(draw: st.DrawFn) -> list[dict]:
    """A generated V1-era module cut into cells at top-level statements, magics between some."""
    program = draw(v1_programs())
    lines = program.source.splitlines(keepends=True)
    cuts = [i for i, line in enumerate(lines) if i and line.strip() and not line[0].isspace() and line[0] != ")"]
    chosen = sorted(draw(st.sets(st.sampled_from(cuts), max_size=4)) if cuts else [])
    cells, last = [], 0
    for cut in [*chosen, len(lines)]:
        if draw(st.booleans()):
            cells.append(code("%matplotlib inline\n"))
        cells.append(code(*lines[last:cut]))
        last = cut
    return cells


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(notebooks(), st.sampled_from(TARGETS))
def test_generated_notebooks_never_lose_a_name(tmp_path: Path, cells: list[dict], target: str) -> None:
    path = write_notebook(tmp_path / "gen.ipynb", cells)
    before = undefined_names(python_of(path))
    codes = [r.code for r in engine.select_rules(target=target)]
    result = engine.process_file(str(path), codes, target, write=True)
    assert result.error is None, result.error
    assert undefined_names(python_of(path)) <= before, python_of(path)
