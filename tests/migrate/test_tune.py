"""Tune function trainables migrate to ray.tune (RTM002/RTM005), undecided functions are
flagged (RTM116), and a migrated Ray 2.6-era Tune script runs on real Ray."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.migrate.conftest import migrate
from tests.migrate.test_rewrites import check

DATA = Path(__file__).parent / "data"


def codes(found: list) -> list[str]:
    return sorted(d.code for d in found)


CHECKPOINT_DIR_TRAINABLES = {
    "tune.run": "from ray import tune\n\n\ndef objective(config, checkpoint_dir=None):\n"
    "    if checkpoint_dir:\n        load(checkpoint_dir)\n\n\ntune.run(objective)\n",
    "a Tuner, with_parameters": "from ray import tune\n\n\ndef objective(config, checkpoint_dir=None, data=None):\n"
    "    step = restore(checkpoint_dir)\n\n\ndef main():\n"
    "    tune.Tuner(tune.with_parameters(objective, data=1)).fit()\n",
}


@pytest.mark.parametrize("source", CHECKPOINT_DIR_TRAINABLES.values(), ids=CHECKPOINT_DIR_TRAINABLES.keys())
def test_a_trainable_with_the_old_checkpoint_dir_parameter_is_flagged_silent(source: str) -> None:
    """Ray 2.60's Tune calls a function trainable with `config` alone: `checkpoint_dir` stays
    None and the trainable never restores (a public script's `def trainable(config,
    checkpoint_dir=None)` passed without a word)."""
    out, found = migrate(source)
    flagged = [d for d in found if "checkpoint_dir=None" in d.message]
    assert out == source and [(d.code, d.severity, d.line) for d in flagged] == [("RTM128", "silent", 4)]
    assert "ray.tune.get_checkpoint()" in flagged[0].message


def test_a_checkpoint_dir_parameter_outside_a_tune_trainable_or_never_read_is_not_flagged() -> None:
    """A helper's or a Train loop's parameter; a trainable's that nothing reads (the corpus's
    kamil-kaczmarek/ray-tune-micro-tutorial: `train_lgbm(training_params, checkpoint_dir=None)`,
    harmless); one read only after `with tune.checkpoint_dir(...) as checkpoint_dir` rebinds it."""
    source = (
        "from ray import tune\nfrom ray.train.torch import TorchTrainer\n\n\n"
        "def save(model, checkpoint_dir=None):\n    print(checkpoint_dir)\n\n\n"
        "def loop(config, checkpoint_dir=None):\n    save(checkpoint_dir)\n\n\n"
        "def unused(config, checkpoint_dir=None):\n    pass\n\n\n"
        "def rebound(config, checkpoint_dir=None):\n    with tune.checkpoint_dir(step=1) as checkpoint_dir:\n"
        "        print(checkpoint_dir)\n\n\n"
        "TorchTrainer(loop).fit()\ntune.run(unused)\ntune.run(rebound)\n"
    )
    assert not [d for d in migrate(source)[1] if "checkpoint_dir=None" in d.message]


def test_session_calls_in_a_tuner_function_become_tune_calls() -> None:
    found = check(
        """\
        from ray import tune
        from ray.air import session


        def objective(config):
            checkpoint = session.get_checkpoint()
            session.report({"score": 1})


        tune.Tuner(objective).fit()
        """,
        """\
        from ray import tune


        def objective(config):
            checkpoint = tune.get_checkpoint()
            tune.report({"score": 1})


        tune.Tuner(objective).fit()
        """,
    )
    assert "RTM101" not in codes(found)  # Tune keeps every result: not a free-floating report
    assert "RTM116" not in codes(found)


def test_wrapped_and_named_trainables_and_the_train_loop_beside_them() -> None:
    check(
        """\
        from ray import tune
        from ray.air import session
        from ray.train.torch import TorchTrainer


        def search(config, data=None):
            session.report({"score": data})


        def loop(config):
            session.report({"loss": 1})


        trainable = tune.with_resources(tune.with_parameters(search, data=1), {"cpu": 1})
        tune.run(trainable)
        TorchTrainer(loop).fit()
        """,
        """\
        from ray import tune
        from ray import train
        from ray.train.torch import TorchTrainer


        def search(config, data=None):
            tune.report({"score": data})


        def loop(config):
            train.report({"loss": 1})


        trainable = tune.with_resources(tune.with_parameters(search, data=1), {"cpu": 1})
        tune.run(trainable)
        TorchTrainer(loop).fit()
        """,
    )


def test_ray_train_api_in_a_trainable_becomes_ray_tune_and_unused_imports_go() -> None:
    found = check(
        """\
        from ray import train, tune
        from ray.train import Checkpoint, RunConfig


        def objective(config):
            if train.get_checkpoint():
                pass
            train.report({"a": 1}, checkpoint=Checkpoint.from_directory("d"))


        tuner = tune.Tuner.restore("/path", trainable=objective)
        tune.Tuner(objective, run_config=RunConfig(name="x")).fit()
        """,
        """\
        from ray import tune


        def objective(config):
            if tune.get_checkpoint():
                pass
            tune.report({"a": 1}, checkpoint=tune.Checkpoint.from_directory("d"))


        tuner = tune.Tuner.restore("/path", trainable=objective)
        tune.Tuner(objective, run_config=tune.RunConfig(name="x")).fit()
        """,
    )
    assert codes(found).count("RTM005") == 4  # get_checkpoint, report, Checkpoint, RunConfig


def test_a_tuner_run_config_with_nested_configs_and_no_tune_alias() -> None:
    check(
        """\
        from ray.train import CheckpointConfig, RunConfig
        from ray.tune import Tuner


        def objective(config):
            pass


        Tuner(objective, run_config=RunConfig(checkpoint_config=CheckpointConfig(num_to_keep=1)))
        """,
        """\
        from ray.tune import Tuner
        from ray import tune


        def objective(config):
            pass


        Tuner(objective, run_config=tune.RunConfig(checkpoint_config=tune.CheckpointConfig(num_to_keep=1)))
        """,
    )


def test_a_function_of_unknown_role_in_a_tune_module_is_flagged_with_both_options() -> None:
    out, found = migrate(
        """\
        from ray import tune
        from ray.air import session


        def step(config):
            session.report({"score": 1})
        """
    )
    flags = [d for d in found if d.code == "RTM116"]
    assert len(flags) == 1 and flags[0].line == 6
    assert "ray.tune.report" in flags[0].message and "ray.train.report" in flags[0].message
    assert "train.report(" in out  # rewritten for the common case, a Train loop


def test_the_flag_names_the_call_as_its_module_spells_it() -> None:
    """A function of the user's named like the call it makes reads as two things, not one."""
    _, found = migrate(
        """\
        from ray import train, tune


        def report(config):
            train.report({"score": 1})
        """
    )
    (flag,) = [d for d in found if d.code == "RTM116"]
    assert "runs `report()`, which calls `ray.train.report()`" in flag.message


def test_tune_runs_v1_era_options_are_flagged_by_what_ray_2_60_does_with_them() -> None:
    """Found in public sweeps (2020-2023): ``tune.run(local_dir=...)`` raises DeprecationWarning on
    Ray 2.60 (RTM108, breaks); the checkpoint options of Ray 2.0-2.6 still run with a warning each
    (RTM129, warns). ``tune.run``'s current options and another library's ``run`` are left alone."""
    _, found = migrate(
        """\
        import ray.serve
        from ray import tune


        def trainable(config):
            tune.report({"loss": 1.0})


        tune.run(
            trainable,
            local_dir="./results",
            keep_checkpoints_num=1,
            checkpoint_score_attr="min-loss",
            resources_per_trial={"cpu": 1},
        )
        tune.run(trainable, storage_path="/tmp/r", checkpoint_config=tune.CheckpointConfig(num_to_keep=1))
        ray.serve.run(app, local_dir="x")
        """
    )
    flags = [(d.code, d.line) for d in found if not d.fixed]
    assert flags == [("RTM108", 9), ("RTM129", 9)], found
    by_code = {d.code: d.message for d in found}
    assert "`tune.run(local_dir=...)` raises DeprecationWarning" in by_code["RTM108"]
    assert "V2 syncs" not in by_code["RTM108"]  # Tune's own option: not RTM108's advice about V2's RunConfig
    assert "`tune.run(keep_checkpoints_num=, checkpoint_score_attr=)`" in by_code["RTM129"]
    assert "checkpoint_score_order=" in by_code["RTM129"]


def test_tuner_restore_without_the_trainable_is_flagged() -> None:
    """Ray 2.5 made ``Tuner.restore``'s trainable required (a public repository's Ray 2.1 script
    restored with the path alone): flagged where it is missing, not where it is given."""
    _, found = migrate(
        """\
        from ray import tune
        from ray.tune import Tuner

        a = tune.Tuner.restore("/tmp/exp", trainable=train_fn)
        b = Tuner.restore("/tmp/exp", train_fn, resume_errored=True)
        c = tune.Tuner.restore("/tmp/exp", resume_errored=True)
        """
    )
    flags = [(d.code, d.line) for d in found if not d.fixed]
    assert flags == [("RTM112", 6)], found
    assert "trainable=" in found[0].message


def test_no_tune_no_change_of_behaviour() -> None:
    out, found = migrate(
        """\
        from ray.air import session


        def step(config):
            session.report({"score": 1})
        """
    )
    assert "train.report(" in out and "tune" not in out
    assert "RTM116" not in codes(found) and "RTM101" in codes(found)


def test_tune_report_positional_checkpoint_gets_its_keyword() -> None:
    check(
        """\
        from ray import tune


        def objective(config):
            tune.report({"a": 1}, ckpt)


        tune.Tuner(objective)
        """,
        """\
        from ray import tune


        def objective(config):
            tune.report({"a": 1}, checkpoint=ckpt)


        tune.Tuner(objective)
        """,
        "RTM003",
    )


@pytest.mark.ray  # runs in the pass's mode: both passes run it
@pytest.mark.extended_rerun
def test_migrated_ray_2_6_tune_examples_run_on_real_ray(tmp_path: Path) -> None:
    """Both examples of the data file (ASHA with checkpoints; with_parameters without a
    scheduler) migrate and run in a fresh Ray, in the mode of this test run (CI: V1 then V2)."""
    script = tmp_path / "tune_examples.py"
    shutil.copy(DATA / "tune_function_trainables.py", script)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    migrated = subprocess.run([sys.executable, "-m", "migrate", str(script)], capture_output=True, text=True, env=env)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    text = script.read_text()
    assert "session." not in text and "tune.report(" in text and "tune.RunConfig(" in text
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "results")],
        capture_output=True,
        text=True,
        env={**env, "RAY_TRAIN_V2_ENABLED": os.environ.get("RAY_TRAIN_V2_ENABLED", "1")},
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    assert result == {
        "best_score": 6,  # a=2, steps 0..3: ASHA keeps the best trial to max_t
        "best_rows": 4,  # every report of the trial, as Tune keeps them
        "checkpoint_step": 3,
        "plain_scores": [13, 14],
        "plain_rows": [3, 3],
    }
