"""File shapes real repositories have: each before/after, and the no-op beside it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from migrate import engine
from migrate.rules import Context
from tests.migrate.conftest import migrate
from tests.migrate.test_rewrites import check

CODES = [r.code for r in engine.select_rules()]


def test_multi_name_imports_keep_their_other_names() -> None:
    check(
        """\
        import os, ray.air
        from ray import tune, air

        c = air.RunConfig(name=os.name)
        t = tune.Tuner
        s = ray.air.ScalingConfig(num_workers=2)
        """,
        """\
        import os, ray
        from ray import train
        from ray import tune

        c = train.RunConfig(name=os.name)
        t = tune.Tuner
        s = train.ScalingConfig(num_workers=2)
        """,
    )


def test_import_ray_air_as_alias_beside_other_names() -> None:
    check(
        """\
        import json, ray.air as air

        c = air.RunConfig(name=json.dumps(1))
        """,
        """\
        import json
        from ray import train

        c = train.RunConfig(name=json.dumps(1))
        """,
    )


def test_pep_263_file_is_read_and_written_in_its_encoding(tmp_path: Path) -> None:
    path = tmp_path / "job.py"
    source = '# -*- coding: latin-1 -*-\nfrom ray.air import session\n# café\ndef f():\n    session.report({"a": 1})\n'
    path.write_bytes(source.encode("latin-1"))
    result = engine.process_file(str(path), CODES, "ray", write=True)
    assert result.error is None and result.changed
    text = path.read_bytes().decode("latin-1")  # still latin-1: not valid UTF-8
    assert "# café" in text and "train.report(" in text
    assert engine.process_file(str(path), CODES, "ray", write=True).changed is False  # idempotent


def test_a_file_that_is_not_utf8_and_declares_nothing_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "job.py"
    path.write_bytes("from ray.air import session\n# café\n".encode("latin-1"))
    result = engine.process_file(str(path), CODES, "ray", write=True)
    assert result.error is not None and result.error.startswith("not UTF-8") and "PEP 263" in result.error


# Python 3.12 caps the C-level recursion libcst's tree code goes through (whatever the
# thread's stack and recursion limit); 3.11 and 3.13 do not.
LIBCST_DEPTH_CAPPED = sys.version_info[:2] == (3, 12)


def test_a_long_generated_expression_does_not_crash_the_tool() -> None:
    # Beyond Python's default recursion limit (1,000). Far longer chains work too (20,000
    # was tried) but libcst's parser takes time quadratic in the chain's length.
    terms = " + ".join(["1"] * 1_500)
    source = f"from ray.air import session\nx = {terms}\ndef f():\n    session.report({{}})\n"
    if LIBCST_DEPTH_CAPPED:  # the fast forms only: libcst's own tree cannot hold it there
        out, found = engine.migrate_source(source, engine.select_rules(), Context())
    else:
        out, found = migrate(source)
    assert "train.report({})" in out and out.count(" + ") == 1_499
    assert any(d.code == "RTM002" for d in found)


def test_a_deep_file_that_needs_libcst_is_an_error_where_libcst_cannot_hold_it(tmp_path: Path) -> None:
    """An import inside a function takes the libcst form: processed on 3.11 and 3.13; on 3.12
    the file is skipped with an error that says why, and the run goes on (no crash, exit 1)."""
    terms = " + ".join(["1"] * 1_500)
    path = tmp_path / "deep.py"
    path.write_text(f"x = {terms}\n\n\ndef f():\n    from ray.air import session\n\n    session.report({{}})\n")
    result = engine.process_file(str(path), CODES, "ray", write=True)
    if LIBCST_DEPTH_CAPPED:
        assert result.error is not None and result.error.startswith("nested too deeply for libcst on Python 3.12")
        assert not result.internal and "session.report" in path.read_text()
    else:
        assert result.error is None and "    train.report({})" in path.read_text()


def test_star_import_from_ray_air_is_flagged_with_the_names_to_import() -> None:
    source = "from ray.air import *\n\ns = ScalingConfig(num_workers=2)\nsession.report({})\n"
    out, found = migrate(source)
    assert out == source  # not rewritten: which names it brought cannot be proven
    flag = next(d for d in found if d.code == "RTM100")
    assert flag.line == 1
    assert "`from ray.train import ScalingConfig`" in flag.message and "`from ray import train`" in flag.message
    _, quiet = migrate("from os.path import *\n\nx = join('a', 'b')\n")
    assert quiet == []


def test_star_import_from_the_session_names_the_session_functions_it_calls() -> None:
    source = "from ray.air.session import *\n\n\ndef f(config):\n    report({'a': 1})\n    c = get_checkpoint()\n"
    out, found = migrate(source)
    assert out == source
    (flag,) = [d for d in found if d.code == "RTM100"]
    assert "names used here: get_checkpoint, report" in flag.message
    assert "`report(...)` -> `train.report(...)`" in flag.message and "no name it brings" not in flag.message


NOTEBOOK = (
    '{\n "cells": [\n  {\n   "cell_type": "markdown",\n   "metadata": {},\n'
    '   "source": [\n    "# Caf\\u00e9 training \\u2014 notes\\n",\n    "session.report is old"\n   ]\n  },\n'
    '  {\n   "cell_type": "code",\n   "execution_count": 3,\n   "metadata": {"tags": ["x"]},\n'
    '   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["d\\u00e9j\\u00e0\\n"]}],\n'
    '   "source": [\n    "%pip install ray\\n",\n    "from ray.air import session\\n",\n'
    "    \"session.report({'a': 1})\"\n   ]\n  },\n"
    '  {\n   "cell_type": "code",\n   "execution_count": null,\n   "metadata": {},\n   "outputs": [],\n'
    '   "source": "pip install ray[air]==2.2.0"\n  }\n ],\n'
    ' "metadata": {"kernelspec": {"name": "python3"}},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n'
)


def test_a_notebook_changes_only_the_source_of_changed_code_cells(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(NOTEBOOK)
    diff = engine.process_file(str(path), CODES, "ray", write=False)
    written = engine.process_file(str(path), CODES, "ray", write=True)
    after = path.read_text()
    expected = NOTEBOOK.replace(
        '"from ray.air import session\\n",\n    "session.report({\'a\': 1})"',
        '"from ray import train\\n",\n    "train.report({\'a\': 1})"',
    )
    assert after == expected  # markdown, escapes, outputs, metadata: byte for byte
    assert [(d.code, d.message) for d in diff.diagnostics] == [(d.code, d.message) for d in written.diagnostics]
    assert any(d.code == "ERROR" and d.message.startswith("cell 3:") for d in written.diagnostics)


def test_each_branch_of_an_import_guard_binds_train() -> None:
    check(
        """\
        try:
            from ray.air import session
        except ImportError:
            from ray.train import session


        def f():
            session.report({"a": 1})
        """,
        """\
        try:
            from ray import train
        except ImportError:
            from ray import train


        def f():
            train.report({"a": 1})
        """,
    )


def test_module_level_uses_get_a_module_level_import() -> None:
    # The only air import is inside a function, but `ray.air.X` is also used at module level.
    check(
        """\
        import ray


        def setup():
            import ray.air
            return ray.air.ScalingConfig(num_workers=2)


        config = ray.air.RunConfig(name="x")
        """,
        """\
        import ray
        from ray import train


        def setup():
            import ray
            return train.ScalingConfig(num_workers=2)


        config = train.RunConfig(name="x")
        """,
    )


def test_a_lazy_import_inside_a_function_stays_there() -> None:
    check(
        """\
        def setup():
            from ray import air
            return air.ScalingConfig(num_workers=2)
        """,
        """\
        def setup():
            from ray import train
            return train.ScalingConfig(num_workers=2)
        """,
    )


def test_string_annotations_naming_air_classes_are_rewritten() -> None:
    check(
        """\
        from ray.air import ScalingConfig


        def f(c: "ray.air.Checkpoint", s: ScalingConfig) -> "ray.air.config.ScalingConfig":
            return s
        """,
        """\
        from ray.train import ScalingConfig


        def f(c: "ray.train.Checkpoint", s: ScalingConfig) -> "ray.train.ScalingConfig":
            return s
        """,
    )
    out, _ = migrate('x = "ray.air.Checkpoint"  # not an annotation: a string like any other\n')
    assert out == 'x = "ray.air.Checkpoint"  # not an annotation: a string like any other\n'


def test_a_name_re_exported_in_all_keeps_its_import_and_is_flagged() -> None:
    out, found = migrate(
        'from ray.air import session\n\n__all__ = ["session", "f"]\n\n\ndef f():\n    session.report({})\n'
    )
    assert out.startswith("from ray.air import session\nfrom ray import train\n")  # importers of `session` still work
    assert "train.report({})" in out
    flag = next(d for d in found if d.code == "RTM100")
    assert flag.line == 3 and "re-exports `session`" in flag.message


def test_one_write_removes_what_the_rewrites_left_unused() -> None:
    """`import ray.air as air` whose every use the rewrites replaced goes in the same run (a
    second run, or a --check right after the write, finds nothing)."""
    check(
        """\
        import ray.air as air
        from ray import tune


        def f(config):
            air.session.report({"a": 1})


        cfg = air.ScalingConfig(num_workers=2)
        """,
        """\
        from ray import tune
        from ray import train


        def f(config):
            train.report({"a": 1})


        cfg = train.ScalingConfig(num_workers=2)
        """,
    )


def test_the_rewrite_adds_no_duplicate_import() -> None:
    check(
        """\
        import ray
        import ray.air
        from ray.air import session


        def f(config):
            session.report({"a": 1})


        cfg = ray.air.RunConfig(name="x")
        """,
        """\
        import ray
        from ray import train


        def f(config):
            train.report({"a": 1})


        cfg = train.RunConfig(name="x")
        """,
    )
    # A duplicate the file already had is the file's own: left as it is.
    source = "import ray\nimport ray\nimport ray.air\n\nx = ray.air.RunConfig()\n"
    assert migrate(source)[0] == "import ray\nimport ray\nfrom ray import train\n\nx = train.RunConfig()\n"


def test_every_branch_of_a_version_guard_binds_what_the_rewritten_code_uses() -> None:
    check(
        """\
        try:
            from ray.train import report
        except ImportError:
            from ray.air.session import report


        def f(config):
            report({"a": 1})
        """,
        """\
        try:
            from ray import train
        except ImportError:
            from ray import train


        def f(config):
            train.report({"a": 1})
        """,
    )  # `report` of the first branch is unused once the calls are `train.report`: it goes
    check(
        """\
        import ray

        if ray.__version__ >= "2.7":
            from ray.train import report, get_checkpoint
        else:
            from ray.air import session


        def f(config):
            session.report({"a": 1})
        """,
        """\
        import ray

        if ray.__version__ >= "2.7":
            from ray.train import report, get_checkpoint
            from ray import train
        else:
            from ray import train


        def f(config):
            train.report({"a": 1})
        """,
    )


def test_a_none_fallback_gets_the_new_name_too() -> None:
    check(
        """\
        try:
            from ray.air import session
        except ImportError:
            session = None


        def f(config):
            session.report({"a": 1})
        """,
        """\
        try:
            from ray import train
        except ImportError:
            session = None
            train = None


        def f(config):
            train.report({"a": 1})
        """,
    )
    # A branch that raises binds nothing: nothing is added to it.
    check(
        """\
        try:
            from ray.air import session
        except ImportError:
            raise SystemExit("pip install ray[air]")

        session.report({"a": 1})
        """,
        """\
        try:
            from ray import train
        except ImportError:
            raise SystemExit("pip install ray[air]")

        train.report({"a": 1})
        """,
    )


def test_comments_inside_a_parenthesised_import_are_kept() -> None:
    check(
        """\
        from ray.air import (  # configs
            ScalingConfig,  # workers
            RunConfig  # storage
        )

        s = ScalingConfig(num_workers=1)
        r = RunConfig()
        """,
        """\
        from ray.train import (  # configs
            ScalingConfig,  # workers
            RunConfig  # storage
        )

        s = ScalingConfig(num_workers=1)
        r = RunConfig()
        """,
    )
    check(
        """\
        from ray.air import (  # configs
            ScalingConfig,  # workers
            RunConfig,  # storage
            session,  # the V1 session
        )


        def f(config):
            session.report({"a": 1})


        s = ScalingConfig(num_workers=1)
        r = RunConfig()
        """,
        """\
        from ray.train import (  # configs
            ScalingConfig,  # workers
            RunConfig,  # storage
        )
        from ray import train  # the V1 session


        def f(config):
            train.report({"a": 1})


        s = ScalingConfig(num_workers=1)
        r = RunConfig()
        """,
    )


def test_a_rewrite_its_encoding_cannot_hold_is_an_error_a_per_file_ignore_records(tmp_path) -> None:
    """The write happens after the tree pass (engine.commit); its error is recorded by
    `per-file-ignores = ["ERROR"]` as process_file's own errors are."""
    for codes, error, suppressed in (((), True, 0), ((engine.UNPARSED_IGNORED,), False, 1)):
        path = tmp_path / "job.py"
        path.write_text("x = 1\n", encoding="ascii")
        result = engine.FileResult(str(path), changed=True, new_text="x = 'é'\n", encoding="ascii")
        engine.commit(result, codes)
        assert (result.error is not None, result.suppressed) == (error, suppressed)
        assert path.read_text() == "x = 1\n"  # nothing written


def test_a_file_processed_leaves_no_reference_cycles(tmp_path) -> None:
    """The garbage collector is paused while a file is processed (engine._collector_paused), so
    a cycle would keep the file's whole tree alive until it runs again: on a tree of thousands of
    files, hundreds of megabytes. Every analysis the rules run here (a Tune trainable's roles, a
    config handed to a Tuner through a name, the tree's handoffs) frees what it built. (A file
    libcst rewrites leaves libcst's own cycles, collected after the file: not this case.)"""
    import gc

    path = tmp_path / "sweep.py"
    path.write_text(
        textwrap.dedent(
            """\
            from ray import train, tune
            from ray.train import CheckpointConfig, RunConfig
            from ray.train.torch import TorchTrainer

            def helper(step):
                tune.report({"step": step})

            def trainable(config):
                helper(1)

            def loop(config):
                train.report({"loss": 1.0})

            def sweep(fn):
                checkpoints = CheckpointConfig(num_to_keep=2, checkpoint_frequency=1)
                config = RunConfig(name="x", checkpoint_config=checkpoints)
                return tune.Tuner(fn, run_config=config).fit()

            sweep(trainable)
            TorchTrainer(loop).fit()
            """
        )
    )
    engine.process_file(str(path), CODES, "ray", False)  # what it imports on first use (libcst) is not the file's
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = engine.process_file(str(path), CODES, "ray", False)
        found = gc.collect()
        kinds = sorted({type(o).__qualname__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert {d.code for d in result.diagnostics} >= {"RTM101", "RTM110"}  # the analyses ran
    assert (found, kinds) == (0, [])


def test_an_import_the_rewrites_leave_unread_goes() -> None:
    """`from ray import train` read only by a Tune trainable's `train.report`, which becomes
    `tune.report`: the import goes with its last use (an import the input never read stays)."""
    check(
        """\
        import ray
        from ray import train, tune
        from ray.train import Checkpoint


        def objective(config):
            train.report({"score": 1})


        tune.run(objective)
        """,
        """\
        import ray
        from ray import tune
        from ray.train import Checkpoint


        def objective(config):
            tune.report({"score": 1})


        tune.run(objective)
        """,
    )


def test_an_import_one_rewrite_adds_and_a_later_one_leaves_unread_is_not_written() -> None:
    """`air.RunConfig` in a Tuner call: RTM001 makes it `train.RunConfig` (importing `train`),
    RTM005 `tune.RunConfig`; the `from ray import train` left unread was written (a public
    Lightning + Tune script; ruff's F401 would have flagged the codemod's own line)."""
    check(
        """\
        from ray import tune, air
        from ray.air.config import ScalingConfig


        def run(trainer):
            tuner = tune.Tuner(trainer, run_config=air.RunConfig(name="tune"))
            return tuner.fit()
        """,
        """\
        from ray import tune


        def run(trainer):
            tuner = tune.Tuner(trainer, run_config=tune.RunConfig(name="tune"))
            return tuner.fit()
        """,
    )


def test_an_import_the_module_re_exports_stays_when_the_rewrites_leave_it_unread() -> None:
    """`__all__` grown by `+=` re-exports `train`: the import stays, as RTM006 keeps a re-export
    (one reading of `__all__`, migrate._imports.exported)."""
    source = (
        "from ray import train, tune\n\n__all__ = ['objective']\n__all__ += ['train']\n\n\n"
        "def objective(config):\n    train.report({'score': 1})\n\n\ntune.run(objective)\n"
    )
    out, _ = migrate(source)
    assert "tune.report({'score': 1})" in out
    assert "from ray import train, tune" in out
