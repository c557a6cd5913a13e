"""Rules judge a value by what it is, not by where it was written: bound to a name first, inside a
function, or inline. And valid code stays quiet: Tune's own configs and callbacks in Tune's
RunConfig are Ray 2.60's API, not V1's."""

from __future__ import annotations

import pytest

from tests.migrate.conftest import migrate


def codes(source: str) -> list[tuple[int, str]]:
    _, found = migrate(source)
    return [(d.line, d.code) for d in found if not d.fixed]


# --- RTM117: a trainer handed to a Tuner


@pytest.mark.parametrize(
    "source",
    [
        # inline, at module level
        "from ray import tune\nfrom ray.train.torch import TorchTrainer\n"
        "tuner = tune.Tuner(TorchTrainer(f), param_space={})\n",
        # bound to a name inside a function
        "from ray import tune\nfrom ray.train.torch import TorchTrainer\n\n\ndef main():\n"
        "    trainer = TorchTrainer(f)\n    tuner = tune.Tuner(trainer, param_space={})\n",
        # bound at module level, passed in a function
        "from ray import tune\nfrom ray.train.torch import TorchTrainer\ntrainer = TorchTrainer(f)\n\n\n"
        "def main():\n    return tune.Tuner(trainer).fit()\n",
    ],
    ids=["inline", "in-a-function", "module-name-used-in-a-function"],
)
def test_a_trainer_given_to_a_tuner_is_flagged_however_it_gets_there(source: str) -> None:
    assert "RTM117" in [code for _, code in codes(source)]


def test_a_name_that_is_a_trainer_in_one_place_and_a_function_in_another_is_not_judged_a_trainer() -> None:
    source = (
        "from ray import tune\nfrom ray.train.torch import TorchTrainer\n\n\ndef a():\n    trainer = TorchTrainer(f)\n"
        "    return trainer.fit()\n\n\ndef b(trainer):\n    return tune.Tuner(trainer).fit()\n"
    )
    assert "RTM117" not in [code for _, code in codes(source)]


# --- RTM106: Tune callbacks in Ray Train's RunConfig


@pytest.mark.parametrize(
    "source",
    [
        "from ray.air.integrations.mlflow import MLflowLoggerCallback\nfrom ray.train import RunConfig\n\n\n"
        "def main():\n    cb = MLflowLoggerCallback(experiment_name='x')\n    return RunConfig(callbacks=[cb])\n",
        "from ray import tune\nfrom ray.train import RunConfig\n\n\nclass Printer(tune.Callback):\n"
        "    def on_trial_result(self, *args, **kwargs):\n        print(args)\n\n\n"
        "config = RunConfig(callbacks=[Printer()])\n",
        "from ray.tune.logger import LoggerCallback\nfrom ray.train import RunConfig\n\n\nclass Base(LoggerCallback):\n"
        "    pass\n\n\nclass Mine(Base):\n    pass\n\n\n"
        "callbacks = [Mine()]\nconfig = RunConfig(callbacks=callbacks)\n",
    ],
    ids=["bound-callback-in-a-function", "users-own-tune-callback", "subclass-of-a-subclass-through-a-list-name"],
)
def test_a_tune_callback_in_a_train_run_config_is_flagged_however_it_gets_there(source: str) -> None:
    assert "RTM106" in [code for _, code in codes(source)]


def test_tunes_own_run_config_takes_tune_callbacks_and_air_integrations_are_2_60s_api() -> None:
    source = (
        "from ray import tune\nfrom ray.air.integrations.wandb import WandbLoggerCallback, setup_wandb\n"
        "from ray.air.integrations.mlflow import MLflowLoggerCallback\n\n\ndef objective(config):\n"
        "    setup_wandb(config)\n    tune.report({'loss': 1.0})\n\n\n"
        "tuner = tune.Tuner(objective, run_config=tune.RunConfig(callbacks=[WandbLoggerCallback(project='p'), "
        "MLflowLoggerCallback()]))\n"
    )
    assert codes(source) == []


# --- RTM108 / RTM109 / RTM110: Tune's configs keep V1's options


def test_tunes_checkpoint_and_failure_configs_keep_their_options() -> None:
    source = (
        "from ray import tune\n\n\ndef objective(config):\n    tune.report({'loss': 1.0})\n\n\n"
        "tuner = tune.Tuner(objective, run_config=tune.RunConfig(stop={'training_iteration': 3}, verbose=1,\n"
        "    checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=2, checkpoint_at_end=True),\n"
        "    failure_config=tune.FailureConfig(fail_fast=True)))\n"
    )
    assert codes(source) == []


def test_ray_trains_configs_with_tunes_options_are_still_flagged() -> None:
    source = (
        "from ray.train import CheckpointConfig, FailureConfig\n"
        "c = CheckpointConfig(checkpoint_frequency=2)\nf = FailureConfig(fail_fast=True)\n"
    )
    assert codes(source) == [(2, "RTM110"), (3, "RTM109")]


def test_a_train_run_config_written_in_a_tuner_is_rewritten_to_tunes_and_not_flagged_after() -> None:
    out, found = migrate(
        "from ray import tune\nfrom ray.train import RunConfig\n\n\n"
        "def objective(config):\n    tune.report({'a': 1})\n\n\n"
        "tuner = tune.Tuner(objective, run_config=RunConfig(stop={'a': 1}, verbose=0))\n"
    )
    assert "tune.RunConfig(stop=" in out
    assert [d.code for d in found if not d.fixed] == []


def test_a_train_run_config_bound_to_a_name_and_given_to_a_tuner_says_use_tunes_not_remove() -> None:
    """Following "remove stop=" would delete the sweep's stopping criterion: Tune's RunConfig keeps it."""
    _, found = migrate(
        "from ray import tune\nfrom ray.train import RunConfig\n\n\n"
        "def objective(config):\n    tune.report({'a': 1})\n\n\n"
        "def main():\n    rc = RunConfig(stop={'training_iteration': 3}, verbose=1)\n"
        "    return tune.Tuner(objective, run_config=rc).fit()\n"
    )
    flagged = [d for d in found if d.code == "RTM108"]
    assert [d.line for d in flagged] == [10]
    assert "ray.tune.RunConfig" in flagged[0].message and "Remove it" not in flagged[0].message


# --- RTM111: the trial API is Tune's


def test_tunes_context_has_the_trial_api() -> None:
    source = (
        "from ray import tune\n\n\ndef objective(config):\n    n = tune.get_context().get_trial_resources()\n"
        "    ctx = tune.get_context()\n    tune.report({'dir': ctx.get_trial_dir()})\n\n\ntune.Tuner(objective).fit()\n"
    )
    assert codes(source) == []


def test_trains_context_trial_api_is_flagged_and_tunes_old_function_names_its_replacement() -> None:
    _, found = migrate(
        "from ray import train, tune\n\n\ndef train_func(config):\n    d = train.get_context().get_trial_dir()\n\n\n"
        "def objective(config):\n    d = tune.get_trial_dir()\n"
    )
    assert [(d.line, d.code) for d in found if not d.fixed] == [(5, "RTM111"), (9, "RTM128")]
    assert "tune.get_context().get_trial_dir()" in found[-1].message


# --- a test's mock of a path the rewrites move


def test_a_mock_patch_of_a_v1_path_is_flagged_with_the_path_the_migrated_code_calls() -> None:
    out, found = migrate(
        "from unittest import mock\n\nfrom ray.air import session\n\n\ndef loop(config):\n"
        "    return session.get_checkpoint()\n\n\n@mock.patch('ray.air.session.get_checkpoint')\n"
        "def test_loop(get_checkpoint):\n    with mock.patch('os.path.exists'):\n        loop({})\n"
    )
    assert "train.get_checkpoint()" in out  # the code it mocks is rewritten...
    patched = [d for d in found if d.code == "RTM100"]
    assert [(d.line, d.severity) for d in patched] == [(10, "silent")]  # ...so the mock is flagged, once
    assert "patch 'ray.train.get_checkpoint'" in patched[0].message


def test_mocker_patch_of_an_air_class_names_its_ray_train_home() -> None:
    _, found = migrate("import ray\n\n\ndef test_it(mocker):\n    mocker.patch('ray.air.checkpoint.Checkpoint')\n")
    assert [d.code for d in found] == ["RTM100"] and "'ray.train.Checkpoint'" in found[0].message


# --- --target compat keeps what it moves flagged


def test_target_compat_keeps_the_framework_checkpoint_flag() -> None:
    source = "from ray.train.torch import TorchCheckpoint\n\nckpt = TorchCheckpoint.from_model(m)\n"
    out, found = migrate(source, target="compat")
    assert out.startswith("from compat.torch import TorchCheckpoint")
    assert "RTM104" in [d.code for d in found if not d.fixed]
    _, again = migrate(out, target="compat")  # what a --check of the migrated tree finds
    assert [d.code for d in again] == ["RTM104"]


# --- RTM128: members of the values a module builds


def test_removed_members_are_flagged_on_the_trainer_result_and_checkpoint_the_module_builds() -> None:
    _, found = migrate(
        "from ray import train\nfrom ray.train.torch import TorchTrainer\n\n\ndef train_func(config):\n"
        "    ckpt = train.get_checkpoint()\n    print(ckpt.uri, ckpt.path)\n\n\ndef main():\n"
        "    trainer = TorchTrainer(train_func)\n    t = trainer.as_trainable()\n    result = trainer.fit()\n"
        "    print(result.config, result.metrics, result.checkpoint.uri)\n    other = {'config': 1}\n"
        "    print(other.config)\n"
    )
    flagged = [(d.line, d.message.split("`")[1]) for d in found if d.code == "RTM128"]
    assert flagged == [
        (7, "Checkpoint.uri"),
        (12, "TorchTrainer.as_trainable"),
        (14, "Result.config"),
        (14, "Checkpoint.uri"),
    ]  # not ckpt.path, result.metrics, or another object's .config


# --- A session call's role (Tune trainable or Train loop) follows the function through the module


def _reports(source: str) -> tuple[str, list[str]]:
    new, found = migrate(source)
    return new, [d.code for d in found if not d.fixed]


def test_a_helper_a_tune_trainable_calls_reports_to_tune() -> None:
    """The trainable's helper (not handed to Tune itself) is the trainable's code: ``tune.report``."""
    new, flags = _reports(
        "from ray import tune\nfrom ray.air import session\n\n\ndef step(config):\n"
        "    session.report({'score': 1})\n\n\ndef trainable(config):\n    step(config)\n\n\n"
        "tune.Tuner(trainable).fit()\n"
    )
    assert "tune.report({'score': 1})" in new and "ray.train.report" not in new
    assert "RTM116" not in flags  # no longer undecided


def test_a_helper_a_train_loop_calls_reports_to_train_inside_a_function_too() -> None:
    new, flags = _reports(
        "from ray import tune\nfrom ray.air import session\nfrom ray.train.torch import TorchTrainer\n\n\n"
        "def step(config):\n    session.report({'loss': 1})\n\n\ndef loop(config):\n    step(config)\n\n\n"
        "def main():\n    trainer = TorchTrainer(loop)\n    return trainer.fit()\n"
    )
    assert "train.report({'loss': 1})" in new and "tune.report" not in new
    assert "RTM116" not in flags


def test_a_helper_both_roles_call_stays_undecided_and_flagged() -> None:
    new, flags = _reports(
        "from ray import tune\nfrom ray.air import session\nfrom ray.train.torch import TorchTrainer\n\n\n"
        "def step(config):\n    session.report({'loss': 1})\n\n\ndef loop(config):\n    step(config)\n\n\n"
        "def trainable(config):\n    step(config)\n\n\nTorchTrainer(loop).fit()\ntune.run(trainable)\n"
    )
    assert "RTM116" in flags and "tune.report" not in new


def test_a_trainable_handed_to_the_modules_own_tuner_wrapper_reports_to_tune() -> None:
    """``def sweep(fn): tune.Tuner(fn)``: what callers give ``sweep`` is a Tune trainable."""
    new, flags = _reports(
        "from ray import tune\nfrom ray.air import session\n\n\ndef sweep(fn, samples=2):\n"
        "    return tune.Tuner(fn, tune_config=tune.TuneConfig(num_samples=samples)).fit()\n\n\n"
        "def objective(config):\n    session.report({'score': config['x']})\n\n\n"
        "def main():\n    return sweep(objective)\n"
    )
    assert "tune.report({'score': config['x']})" in new
    assert "RTM116" not in flags
