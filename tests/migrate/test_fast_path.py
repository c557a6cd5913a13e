"""The rewriting rules' fast path (text edits at ``ast`` positions) against their libcst
forms: same text, same findings, on generated V1-era modules of many shapes; and the
common shapes really do skip libcst (that is where the codemod's speed comes from)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from migrate import engine
from migrate.rules import RULES, Context

IMPORTS = [
    "from ray.air import session",
    "from ray.air import session as s",
    "from ray.air import session, ScalingConfig",
    "from ray.air import ScalingConfig, session  # legacy",
    "from ray.air.config import ScalingConfig, RunConfig as RC",
    "from ray.air import DatasetConfig",
    "from ray.air.checkpoint import Checkpoint",
    "from ray.air.session import report",
    "from ray.air.session import get_world_rank as rank_of",
    "from ray.train._internal import session",
    "import ray.air.session",
    "from ray import air",
    "import ray",
    "import os, ray.air",
    "from ray import train",
    "from ray import tune",
    "from ray.train.torch import TorchTrainer",
    "from ray.air import (session)",
    "from  ray.air import session",
    "from ray.air import session,ScalingConfig",
    "import os; from ray.air import session",
    "from ray.air import session  # noqa: F401",
    "from ray.air import session  # noqa",
    "from ray.air import session, ScalingConfig  # noqa: RTM006",
    "from ray.air import session  # noqa: E501",
    "from ray.air.config import (\n    ScalingConfig,\n    RunConfig,\n)",
    "from ray.air.config import (\n    ScalingConfig as SC, RunConfig\n)  # moved",
    "from ray.air.config import (ScalingConfig,\n                            RunConfig as RC,)",
    "from ray.air.config import (\n    ScalingConfig,  # sizes\n    RunConfig,\n)",
    "from ray.air import (\n    session,\n    ScalingConfig,\n)",
    "from ray.air.session import (\n    report,\n    get_world_rank as rank_of,\n)",
    "from ray.air.config import (\n    ScalingConfig  as  SC,\n)",
    "try:\n    from ray.air import session\nexcept ImportError:\n    session = None",
    "if True:\n    from ray.air import session\nelse:\n    from ray.train import session",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ray.air.config import RunConfig",
]

STATEMENTS = [
    "session.report({'loss': 1.0})",
    "session.report({'rank': session.get_world_rank()})",
    "rank = session.get_world_rank()",
    "s.report({'x': 1})",
    "report({'x': 1})",
    "rank_of()",
    "(session.report)({'x': 1})",
    "session.report(\n        {'x': 1},\n    )",
    "session . report({'x': 1})",
    "checkpoint = session.get_checkpoint()",
    "shard = session.get_dataset_shard('train')",
    'print(f"{session.get_world_rank()}")',
    "callback(session)",
    "hook = session.get_world_rank",
    "ray.air.session.report({})",
    "scaling = ScalingConfig(num_workers=2)",
    "config = air.RunConfig()",
    "config = RC(name='x')",
    "ckpt: 'ray.air.Checkpoint' = None",
    "train = 1",
    "ray_train = 2",
    "f(train=3)",
    "session = None",
    "data = DatasetConfig()",
    "x = 'é'",
    "pass",
]

MODULE_LEVEL = [
    "",
    "def typed(x: 'RunConfig') -> 'Optional[Checkpoint]':\n    return x",
    "# the session is gone; RunConfig stays",
    "if True:\n    from ray.air.session import report\n    x = 1",
    "class Holder:\n    from ray.air import session",
    "__all__ = ['session']",
    "def train(config):\n    pass",
    "TorchTrainer(loop).fit()",
    "tune.Tuner(loop).fit()",
    "session.report({'top': 1})",
]


@st.composite
def modules(draw: st.DrawFn) -> str:
    imports = draw(st.lists(st.sampled_from(IMPORTS), max_size=4))
    body = draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=5))
    tail = draw(st.sampled_from(MODULE_LEVEL))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    final = draw(st.sampled_from(["\n", ""]))
    gap = draw(st.sampled_from([["", ""], [], ["# setup"]]))
    lines = [*imports, *gap, "def loop(config):", *(f"    {s}" for s in body), "", tail]
    return newline.join("\n".join(lines).split("\n")).rstrip() + final.replace("\n", newline)


def both(text: str, target: str, path: str = "") -> None:
    rules = engine.select_rules(target=target)
    context = Context(target=target, path=path)  # type: ignore[arg-type]
    for lines_of in ("input", "output"):
        try:
            fast = engine.migrate_source(text, rules, context, lines_of=lines_of)
        except SyntaxError as exc:  # both forms see the same ast first
            with pytest.raises(type(exc)):
                engine.migrate_source(text, rules, context, lines_of=lines_of, fast=False)
            return
        assert fast == engine.migrate_source(text, rules, context, lines_of=lines_of, fast=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules(), st.sampled_from(["ray", "compat"]), st.sampled_from(["job.py", "pkg/__init__.py"]))
@example(
    "from ray.air import session, ScalingConfig\n\n\ndef loop(config):\n"
    "    session.report({'rank': session.get_world_rank()})\n",
    "ray",
    "job.py",
)
def test_the_fast_path_rewrites_exactly_as_libcst(text: str, target: str, path: str) -> None:
    both(text, target, path)


COMMON = [
    # the benchmark's V1-era module: mixed air import, session calls, config classes
    "from ray.air import session, ScalingConfig\nfrom ray.air.config import RunConfig\n"
    "from ray.train.torch import TorchTrainer\n\n\ndef loop(config):\n"
    "    session.report({'rank': session.get_world_rank()})\n\n\n"
    "TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=2), run_config=RunConfig()).fit()\n",
    # a session function imported by name, with a comment on the import
    "from ray.air.session import report  # old API\n\n\ndef loop(config):\n    report({'x': 1})\n",
    # a multi-line import whose names all move
    "from ray.air.config import (\n    ScalingConfig,\n    RunConfig as RC,\n)\n\nRC(scaling=ScalingConfig())\n",
    # the session object is also used as a value: its import stays, train's goes below
    "from ray.air import session\n\n\ndef loop(config):\n    hook = session.get_world_rank\n"
    "    session.report({'x': hook()})\n",
    # an import nothing uses any more, and one used only in a string annotation
    "import os\nfrom ray.air import session\nfrom ray.air.config import RunConfig\n\n\n"
    "def job(config: 'RunConfig') -> None:\n    print(os.getcwd())\n",
    # the name `train` is taken: the import gets another name
    "from ray.air import session\n\n\ndef train(config):\n    session.report({'x': 1})\n",
]


@pytest.mark.parametrize("text", COMMON)
def test_common_shapes_are_rewritten_without_libcst(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = engine.migrate_source(text, engine.select_rules(), Context(), fast=False)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("libcst was asked to parse a file the fast path handles")

    monkeypatch.setattr(engine, "parse_module", refuse)
    assert engine.migrate_source(text, engine.select_rules(), Context()) == expected
    assert expected[0] != text  # they are rewritten


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["air", "session", "tune", ".run", "compat", "report", "stop", "_dict", "x", " ", "."]))
)
def test_a_trigger_looked_up_by_its_words_matches_as_its_regex(pieces: list[str]) -> None:
    text = "".join(pieces)
    for rule in RULES:
        assert rule.triggered(text) == (rule.trigger.search(text) is not None), (rule.code, text)


def test_a_run_the_fast_path_handles_never_imports_libcst(tmp_path) -> None:
    # libcst's import is most of the codemod's start-up (a pre-commit hook pays it on every
    # commit): a run whose files all take the fast path must not pay it, and one that needs
    # a libcst form still works.
    import subprocess
    import sys

    (tmp_path / "fast.py").write_text(COMMON[0])
    (tmp_path / "slow.py").write_text("def f():\n    from ray.air import session\n\n    session.report({})\n")
    script = (
        "import sys\nfrom migrate.__main__ import main\n"
        "code = main(['--check', '--quiet', sys.argv[1]])\n"
        "print(code, 'libcst' in sys.modules)\n"
    )

    def run(name: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / name)], capture_output=True, text=True, check=True
        )
        return done.stdout.split()[-2:]

    assert run("fast.py") == ["1", "False"]  # changes pending, libcst never imported
    assert run("slow.py") == ["1", "True"]  # the libcst form ran
