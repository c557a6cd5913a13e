"""Properties of the codemod over generated V1-era programs and arbitrary Python."""

from __future__ import annotations

import re
import warnings

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from libcst.metadata import MetadataWrapper, QualifiedNameProvider

from migrate import engine
from migrate.rules import Context
from tests.migrate.conftest import ROADS, unreported_after_write
from tests.properties.programs import v1_programs
from tests.suite import examples

pytestmark = pytest.mark.one_pass  # the codemod does not depend on RAY_TRAIN_V2_ENABLED

EXAMPLES = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
RULES = engine.select_rules()


def migrate(source: str) -> tuple[str, list]:
    return engine.migrate_source(source, RULES, Context())


class _OldReferences(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (QualifiedNameProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self._add(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._add(node)

    def _add(self, node: cst.CSTNode) -> None:
        qualified = self.get_metadata(QualifiedNameProvider, node, set())
        self.names |= {q.name for q in qualified if q.name.startswith(("ray.air", "ray.train.session"))}


def old_references(source: str) -> set[str]:
    """Qualified names of V1 session / ray.air references left in the code."""
    visitor = _OldReferences()
    MetadataWrapper(cst.parse_module(source)).visit(visitor)
    return visitor.names


@EXAMPLES
@given(v1_programs())
def test_generated_v1_programs_are_fully_migrated(program) -> None:
    out, found = migrate(program.source)
    cst.parse_module(out)
    compile(out, "<migrated>", "exec")
    assert old_references(out) == set(), out
    assert "ray.air" not in out
    flagged = {d.code for d in found if not d.fixed}
    assert program.expected_flags <= flagged, (program.expected_flags - flagged, out)
    assert f"def {program.function}(config):" in out
    if program.function == "train":  # the function name must keep meaning the function
        assert "from ray import train as ray_train" in out and "ray_train.report(" in out


@EXAMPLES
@given(v1_programs())
def test_the_codemod_is_idempotent(program) -> None:
    once, _ = migrate(program.source)
    twice, found = migrate(once)
    assert twice == once
    assert not [d for d in found if d.fixed]


@EXAMPLES
@given(hypothesmith.from_grammar())
def test_arbitrary_python_is_never_corrupted(source: str) -> None:
    text = "import ray\n" + source  # get past the pre-filter so every rule runs
    try:
        out, found = migrate(text)
    except cst.ParserSyntaxError:
        return  # reported as "does not parse" by the CLI; nothing written
    assert out == text
    assert not [d for d in found if d.fixed]


@settings(max_examples=examples(200), deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_node())
def test_arbitrary_syntax_trees_are_never_corrupted(source: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        text = "import ray\n" + source
        try:
            out, found = migrate(text)
        except cst.ParserSyntaxError:
            return
    assert out == text
    assert not [d for d in found if d.fixed]


@EXAMPLES
@given(hypothesmith.from_grammar())
def test_code_without_ray_is_never_parsed_or_changed(tmp_path_factory, source: str) -> None:
    if re.search(r"\bray\b", source):
        return
    path = tmp_path_factory.mktemp("plain") / "module.py"
    path.write_text(source, encoding="utf-8")
    before = path.read_bytes()
    result = engine.process_file(str(path), [r.code for r in RULES], "ray", write=True)
    assert not result.parsed and not result.changed and result.error is None
    assert path.read_bytes() == before


@EXAMPLES
@given(v1_programs(), st.sampled_from(ROADS))
def test_a_write_reports_everything_its_check_finds(program, road) -> None:
    """Self-consistency: after a write (along each target's road), ``--check`` on the output
    finds nothing the write did not report at that line, and a second run changes nothing."""
    assert unreported_after_write(program.source, road) == []


def _as_notebook(source: str, cuts: list[int]) -> str:
    """``source`` as a notebook whose code cells start at top-level statements ``cuts`` picks (a
    Markdown cell between)."""
    import json

    lines = source.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line[:1] not in ("", " ", "\t", "\n")]
    bounds = sorted({starts[c % len(starts)] for c in cuts} | {0, len(lines)})
    cells = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        cells.append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                      "source": lines[start:end]})  # fmt: skip
        cells.append({"cell_type": "markdown", "metadata": {}, "source": ["notes\n"]})
    return json.dumps({"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4,
                       "nbformat_minor": 5}, indent=1)  # fmt: skip


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    programs=st.lists(v1_programs(), min_size=1, max_size=3),
    notebook=st.booleans(),
    cuts=st.lists(st.integers(0, 60), max_size=3),
    target=st.sampled_from(["ray", "compat"]),
)
def test_add_noqa_then_check_passes_on_any_tree_of_v1_era_modules(
    tmp_path_factory, programs, notebook, cuts, target
) -> None:
    """The baseline by construction: ``--add-noqa`` then ``--check`` exits 0 whatever V1-era
    modules (and notebooks) the tree holds, and a second ``--add-noqa`` adds nothing."""
    import contextlib
    import io

    from migrate.__main__ import main

    tree = tmp_path_factory.mktemp("tree")
    for number, program in enumerate(programs):
        (tree / f"job{number}.py").write_text(program.source)
    if notebook:
        (tree / "explore.ipynb").write_text(_as_notebook(programs[0].source, cuts))
    common = [str(tree), "--isolated", "--jobs", "1", "--target", target]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
        assert main([*common, "--add-noqa"]) == 0, err.getvalue()
        checked = main([*common, "--check"])
        assert checked == 0, out.getvalue() + err.getvalue() + "".join(p.source for p in programs)
        marked = {p: p.read_text() for p in tree.iterdir()}
        assert main([*common, "--add-noqa"]) == 0
    assert "Added 0 noqa directive(s) in 0 file(s)." in err.getvalue()
    assert {p: p.read_text() for p in tree.iterdir()} == marked
