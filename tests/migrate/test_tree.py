"""The tree pass: a function one module defines and another hands to Tune or a Trainer is judged
by what runs it (migrate.tree), in a write, a --diff and an --add-noqa baseline alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from migrate.__main__ import main
from migrate.tree import Handoff, given_roles

TRAINING = """from ray.air import session


def objective(config):
    step(config)


def step(config):
    session.report({"score": config["x"]})
"""

RUNNERS = {
    "absolute": "from ray import tune\nfrom pkg.training import objective\n\ntune.run(objective, config={'x': 1})\n",
    "relative": "from ray import tune\nfrom .training import objective\n\n\ndef main():\n"
    "    return tune.Tuner(objective).fit()\n",
    "aliased, wrapped": "import ray.tune\nfrom pkg.training import objective as obj\n\n"
    "ray.tune.Tuner(ray.tune.with_parameters(obj, data=1)).fit()\n",
    # the module imported whole, its function named through it
    "module alias": "from ray import tune\nimport pkg.training as t\n\ntune.run(t.objective)\n",
    "module path": "from ray import tune\nimport pkg.training\n\ntune.run(pkg.training.objective)\n",
    "module from package": "from ray import tune\nfrom pkg import training\n\n"
    "tune.Tuner(tune.with_parameters(training.objective, data=1)).fit()\n",
    "imported in main()": "from ray import tune\n\n\ndef main():\n    from pkg.training import objective\n\n"
    "    tune.run(objective)\n",
    "module, relative": "from ray import tune\nfrom . import training\n\n\ndef sweep(fn):\n"
    "    return tune.Tuner(fn).fit()\n\n\nsweep(training.objective)\n",
}


def _tree(tmp_path: Path, runner: str) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "training.py").write_text(TRAINING)
    (package / "main.py").write_text(runner)
    return package


@pytest.mark.parametrize("runner", RUNNERS.values(), ids=RUNNERS.keys())
def test_a_trainable_another_module_hands_to_tune_reports_to_tune(tmp_path: Path, runner: str, monkeypatch) -> None:
    package = _tree(tmp_path, runner)
    monkeypatch.chdir(tmp_path)
    main(["pkg", "--isolated"])  # a write
    written = (package / "training.py").read_text()
    assert 'tune.report({"score": config["x"]})' in written  # in the helper the trainable calls
    assert "ray.train" not in written and "session" not in written
    assert main(["pkg", "--isolated", "--check"]) == 0  # nothing left, nothing undecided


def test_alone_the_module_is_still_read_as_a_train_loop(tmp_path: Path, monkeypatch, capsys) -> None:
    """Without the module that runs it the codemod cannot know: given the one file, it reads it
    as before (what runs it is in another tree; docs/migrate.md, Known limits)."""
    _tree(tmp_path, RUNNERS["absolute"])
    monkeypatch.chdir(tmp_path)
    main(["pkg/training.py", "--isolated", "--diff"])
    assert '+    train.report({"score": config["x"]})' in capsys.readouterr().out


def test_a_baseline_of_the_tree_holds_with_the_tree_pass(tmp_path: Path, monkeypatch) -> None:
    """--add-noqa re-reads the files it marked; it keeps what the other files hand them, so the
    directives it writes are the ones --check then needs (an RTM101 of the Train reading, unused
    under Tune's, made --check fail on the public tree this pass was written for)."""
    _tree(tmp_path, RUNNERS["absolute"])
    monkeypatch.chdir(tmp_path)
    main(["pkg", "--isolated", "--add-noqa"])
    assert main(["pkg", "--isolated", "--check"]) == 0


def test_a_function_handed_to_tune_and_to_a_trainer_stays_undecided(tmp_path: Path, monkeypatch, capsys) -> None:
    package = _tree(tmp_path, RUNNERS["absolute"])
    (package / "loops.py").write_text(
        "from ray.train.torch import TorchTrainer\nfrom pkg.training import objective\n\n"
        "TorchTrainer(objective).fit()\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["pkg", "--isolated", "--check"]) == 1
    assert "RTM116" in capsys.readouterr().out


def test_handoffs_find_their_module_by_its_path() -> None:
    paths = ["src/pkg/training.py", "src/pkg/sub/__init__.py", "src/pkg/main.py", "other/training.py"]
    found = given_roles(
        [
            ("src/pkg/main.py", [Handoff("pkg.training", 0, "f", "tune"), Handoff("sub", 1, "g", "train")]),
            ("other/run.py", [Handoff("", 1, "h", "tune")]),  # `from . import h`: the package itself
        ],
        paths,
    )
    assert found == {"src/pkg/training.py": (("f", "tune"),), "src/pkg/sub/__init__.py": (("g", "train"),)}
