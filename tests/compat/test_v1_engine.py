"""V1 semantics on Ray's V2 engine (``COMPAT_V1_ENGINE=v2``): the v1 backend's results
without Ray's V1 engine, compared with the same programs on Ray's V1 engine."""

from __future__ import annotations

import ast
import importlib
import os
import re
import tempfile
from typing import Any

import pytest

import compat as train
from compat import DataParallelTrainer
from compat_core import switch
from compat_core.migration import usage
from compat_core.releases import adapters

# The seed examples, imported when run: they import torch, which this module's own training
# functions do not need (a worker imports the module that defines its function).
SEEDS = {
    "config_and_results": lambda storage: _example("config_and_results").main(storage),
    "async_validation": lambda storage: _example("async_validation").main(storage, epochs=2),
    "after_report_callback": lambda storage: _example("after_report_callback").main(storage)[0],
}


def _example(name: str) -> Any:
    return importlib.import_module(f"examples.{name}")


def test_the_engine_follows_the_variable_and_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(switch.ENGINE_ENV_VAR, raising=False)
    assert switch.v1_engine() is switch.V1  # this Ray still ships V1's engine
    monkeypatch.setattr(adapters, "has_v1_engine", lambda: False)
    assert switch.v1_engine() is switch.V2  # the day Ray deletes it, V1 semantics keep working
    monkeypatch.setenv(switch.ENGINE_ENV_VAR, "V1")
    assert switch.v1_engine() is switch.V1
    monkeypatch.setenv(switch.ENGINE_ENV_VAR, "ray-v2")
    with pytest.raises(train.InvalidSwitchValueError, match="COMPAT_V1_ENGINE=v2"):
        switch.v1_engine()
    assert switch.mode_of(switch.V2) == switch.Mode(switch.V2, switch.V2)


@pytest.mark.ray
@pytest.mark.one_pass
@pytest.mark.parametrize("seed", sorted(SEEDS))
# CI: four seeds; config_and_results's reads of a Result on V2's engine are test_runs.py's v1 cases in
# CI's second pass (result metrics, metrics_dataframe rows).
@pytest.mark.extended_cases("config_and_results")
def test_seed_examples_give_v1_results_on_the_v2_engine(seed, v1, monkeypatch, tmp_path) -> None:
    results = {}
    for engine in ("v1", "v2"):
        monkeypatch.setenv(switch.ENGINE_ENV_VAR, engine)
        results[engine] = SEEDS[seed](str(tmp_path / engine))
    on_v1, on_v2 = results["v1"], results["v2"]
    assert on_v1.backend == on_v2.backend == "v1"
    assert (on_v1.metrics_dataframe is None) == (on_v2.metrics_dataframe is None)
    if on_v1.metrics_dataframe is not None:
        assert sorted(on_v2.metrics_dataframe.columns) == sorted(on_v1.metrics_dataframe.columns)
        assert len(on_v2.metrics_dataframe) == len(on_v1.metrics_dataframe)
    assert sorted(on_v2.metrics) == sorted(on_v1.metrics)  # V1's auto-filled keys included
    v1_names = [os.path.basename(c.path) for c, _ in on_v1.best_checkpoints]
    assert [os.path.basename(c.path) for c, _ in on_v2.best_checkpoints] == v1_names
    assert [r.status for r in on_v2.reported_checkpoints] == [r.status for r in on_v1.reported_checkpoints]
    for name in ("progress.csv", "result.json", "params.json"):
        assert os.path.exists(os.path.join(on_v2.path, name)), name


def _fails_once_after_a_checkpoint(config) -> None:
    context = train.get_context()
    start = 0
    checkpoint = train.get_checkpoint()
    if checkpoint is not None:
        with open(os.path.join(checkpoint.path, "epoch")) as f:
            start = int(f.read()) + 1
    for epoch in range(start, 3):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "epoch"), "w") as f:
                f.write(str(epoch))
            train.report({"epoch": epoch}, checkpoint=train.Checkpoint.from_directory(d))
        train.report({"epoch": epoch, "free": 1})  # a free-floating report, kept by V1
        if epoch == 0 and checkpoint is None and context.get_world_rank() == 0:
            raise RuntimeError("once")
    if context.get_world_rank() == 0:
        names = {
            "trial_name": context.get_trial_name(),
            "trial_id": context.get_trial_id(),
            "experiment": context.get_experiment_name(),
            "trial_dir": context.get_trial_dir(),
        }
        with open(os.path.join(config["out"], "context.txt"), "w") as f:
            f.write(repr(names))


@pytest.mark.ray
@pytest.mark.one_pass
def test_a_retried_run_numbers_checkpoints_as_v1_and_the_trial_api_answers(v1, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(switch.ENGINE_ENV_VAR, "v2")
    monkeypatch.setattr(usage, "_warned", set())  # "once" is per process
    trainer = DataParallelTrainer(
        _fails_once_after_a_checkpoint,
        train_loop_config={"out": str(tmp_path)},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(
            name="retry",
            storage_path=str(tmp_path),
            failure_config=train.FailureConfig(max_failures=1),
            verbose=0,  # a V1 option V2's engine has no place for: said, not silently dropped
        ),
    )
    with pytest.warns(train.V1OnlyWarning, match=r"RunConfig\(verbose=\.\.\.\)\)\. Ignored in this run") as seen:
        result = trainer.fit()
    assert sum("Ignored in this run" in str(w.message) for w in seen) == 1
    trial_dir = os.path.basename(result.path)
    assert os.path.dirname(result.path) == str(tmp_path / "retry") and trial_dir.startswith("DataParallelTrainer_")
    # The restored attempt continues V1's numbering: nothing earlier is overwritten.
    checkpoints = sorted(n for n in os.listdir(result.path) if re.fullmatch(r"checkpoint_\d+", n))
    assert checkpoints == ["checkpoint_000000", "checkpoint_000001", "checkpoint_000002"]
    # Every report of both attempts: epoch 0 (twice: checkpoint, free), then 1 and 2.
    assert list(result.metrics_dataframe["epoch"]) == [0, 0, 1, 1, 2, 2]
    assert list(result.metrics_dataframe["training_iteration"]) == [1, 2, 3, 4, 5, 6]
    assert result.metrics["epoch"] == 2 and result.metrics["free"] == 1
    with open(tmp_path / "context.txt") as f:
        names = ast.literal_eval(f.read())
    assert names["experiment"] == "retry"
    assert names["trial_dir"] == result.path
    assert trial_dir.startswith(names["trial_name"] + "_0_")
    assert names["trial_name"] == f"DataParallelTrainer_{names['trial_id']}"


def _returns() -> None:
    pass


@pytest.mark.ray
@pytest.mark.one_pass
@pytest.mark.parametrize(
    "options", [{"checkpoint_frequency": 2}, {"checkpoint_at_end": True}], ids=["frequency", "at-end"]
)
def test_checkpoint_options_a_training_loop_cannot_honour_are_refused_on_either_engine(
    options, v1, monkeypatch, tmp_path
) -> None:
    """Ray's test_torch_trainer.py::test_checkpoint_freq: V1's engine refuses ``checkpoint_frequency``
    (and ``checkpoint_at_end``) on a trainer with a training loop, before any worker starts; V1
    semantics on V2's engine refuse the same run with the same error, so V1-era code keeps the
    error it expects the day V1's engine is gone (not a warning that the option is ignored)."""
    raised = {}
    for engine in ("v1", "v2"):
        monkeypatch.setenv(switch.ENGINE_ENV_VAR, engine)
        run = train.RunConfig(
            storage_path=str(tmp_path), name=engine, checkpoint_config=train.CheckpointConfig(**options)
        )
        with pytest.raises(ValueError) as error:
            DataParallelTrainer(_returns, scaling_config=train.ScalingConfig(num_workers=1), run_config=run).fit()
        raised[engine] = (type(error.value), str(error.value))
    assert raised["v2"] == raised["v1"]
    assert raised["v1"][0] is ValueError and "to your CheckpointConfig, but this trainer does not" in raised["v1"][1]


@pytest.mark.ray
@pytest.mark.one_pass
@pytest.mark.parametrize("variable", ["RAY_AIR_LOCAL_CACHE_DIR", "TUNE_RESULT_DIR"])
def test_the_local_directory_variables_ray_removed_are_refused_on_either_engine(
    variable, v1, monkeypatch, tmp_path
) -> None:
    """V1's engine refuses a run while ``RAY_AIR_LOCAL_CACHE_DIR`` or ``TUNE_RESULT_DIR`` is set
    (Tune's ``DeprecationWarning``, raised at ``fit()`` before any worker starts: Ray's older
    test_new_persistence.py set the first and fails on 2.60); V1 semantics on V2's engine refuse
    the same run with Ray's words, where they had ignored the variable."""
    raised = {}
    monkeypatch.setenv(variable, str(tmp_path / "results"))
    for engine in ("v1", "v2"):
        monkeypatch.setenv(switch.ENGINE_ENV_VAR, engine)
        run = train.RunConfig(storage_path=str(tmp_path), name=engine)
        with pytest.raises(DeprecationWarning) as error:
            DataParallelTrainer(_returns, scaling_config=train.ScalingConfig(num_workers=1), run_config=run).fit()
        raised[engine] = (type(error.value), str(error.value))
    assert raised["v2"] == raised["v1"]
    assert f"The environment variable `{variable}` is deprecated" in raised["v1"][1]


def _fails_once_at_the_third_iteration() -> None:
    """Ray's test_tune.py::test_retry_with_max_failures' training function."""
    checkpoint = train.get_checkpoint()
    restored, start = checkpoint is not None, 0
    if checkpoint is not None:
        with open(os.path.join(checkpoint.path, "iter")) as f:
            start = int(f.read()) + 1
    for i in range(start, 4):
        if i == 2 and not restored:
            raise RuntimeError("try to fail me")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "iter"), "w") as f:
                f.write(str(i))
            train.report({"test": i, "training_iteration": i}, checkpoint=train.Checkpoint.from_directory(d))


@pytest.mark.ray
@pytest.mark.one_pass
def test_a_trial_tune_retries_resumes_from_its_latest_checkpoint_on_the_v2_engine(v1, monkeypatch, tmp_path) -> None:
    """Ray's test_tune.py::test_retry_with_max_failures with compat's trainer on V2's engine: Tune's
    FailureConfig(max_failures=3) retries the trial, which starts from its latest checkpoint, as
    V1's trainer does as a trainable (the oracle's figures: Ray's own test asserts iter 3)."""
    from ray import tune

    monkeypatch.setenv(switch.ENGINE_ENV_VAR, "v2")
    trainer = DataParallelTrainer(_fails_once_at_the_third_iteration, scaling_config=train.ScalingConfig(num_workers=1))
    failure = tune.FailureConfig(max_failures=3)
    grid = tune.Tuner(trainer, run_config=tune.RunConfig(storage_path=str(tmp_path), failure_config=failure)).fit()
    assert not grid.errors
    with open(os.path.join(grid[0].checkpoint.path, "iter")) as f:
        assert f.read() == "3"  # raw V1: 3 (before, on V2's engine: 1, every retry from scratch)
