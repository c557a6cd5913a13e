"""compat's objects are Ray's objects: a codebase half on ``ray.train`` and half on compat mixes
both ways. compat's configs, results and contexts are instances of ``ray.train``'s classes in
the setting the process runs under, and Ray's own trainers and Tuner take compat's configs,
observing what they observe with Ray's own (raw Ray as the oracle).

Ray's ``ray.train`` picks its classes when first imported, so each test checks the setting its
process started with: CI's first pass V1's, its second V2's (tests/compat/test_parity.py
checks every public class in both settings from fresh interpreters).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from pathlib import Path
from typing import Any

import pytest
import ray.train
from ray.train.torch import TorchTrainer as RayTorchTrainer

import compat
from compat_core.releases import facts

V2 = os.environ.get("RAY_TRAIN_V2_ENABLED", "1").lower() in ("1", "true")


def configs(train: Any, storage: Path, name: str) -> dict[str, Any]:
    """The configs a shared module builds, with ``train`` either ``ray.train`` or compat."""
    return {
        "scaling_config": train.ScalingConfig(num_workers=1),
        "run_config": train.RunConfig(
            name=name,
            storage_path=str(storage),
            failure_config=train.FailureConfig(max_failures=1),
            checkpoint_config=train.CheckpointConfig(num_to_keep=2, checkpoint_score_attribute="loss"),
        ),
    }


@pytest.mark.parametrize("name", ["RunConfig", "ScalingConfig", "CheckpointConfig", "FailureConfig"])
def test_compats_configs_are_instances_of_rays_classes(name: str) -> None:
    ours = getattr(compat, name)()
    assert isinstance(ours, getattr(ray.train, name))


def test_compats_run_config_is_filled_in_as_rays() -> None:
    """What Ray's RunConfig fills in when made, compat's does too (Ray's Tuner and trainers read it)."""
    theirs, ours = ray.train.RunConfig(), compat.RunConfig()
    for field in ("storage_path", "failure_config", "checkpoint_config"):
        assert getattr(ours, field) is not None, field
        assert type(getattr(ours, field)).__name__ == type(getattr(theirs, field)).__name__
    assert ours.storage_path == theirs.storage_path
    if not V2:  # V1's own: verbose and sync_config filled in, the verbose given kept
        assert ours.sync_config == theirs.sync_config and ours.verbose == theirs.verbose
        assert ours._verbose is theirs._verbose is None
        assert compat.RunConfig(verbose=0)._verbose == 0


def test_a_hand_built_result_is_rays() -> None:
    ours = compat.Result(metrics={"loss": 1.0}, checkpoint=None, error=None, path="/tmp/run")
    theirs = ray.train.Result(metrics={"loss": 1.0}, checkpoint=None, error=None, path="/tmp/run")
    assert isinstance(ours, ray.train.Result)
    assert ours.best_checkpoints == theirs.best_checkpoints  # None, as Ray's
    assert ours.filesystem.type_name == theirs.filesystem.type_name


def test_rays_trainer_and_tuner_are_made_with_compats_configs(tmp_path: Path) -> None:
    """Ray refused compat's configs when a trainer was made (``run_config should be an instance
    of ray.train.RunConfig`` under V1, ``Invalid RunConfig type`` under V2)."""
    made = RayTorchTrainer(lambda: None, **configs(compat, tmp_path, "made"))
    assert isinstance(made.run_config, ray.train.RunConfig)
    if not V2:  # V1's Tuner read the storage path compat's RunConfig left None (ArrowInvalid)
        from ray import tune

        tuner = tune.Tuner(made, run_config=compat.RunConfig(failure_config=compat.FailureConfig(max_failures=3)))
        assert tuner is not None


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("compat.torch:TorchTrainer", "ray.train.torch:TorchTrainer"),
        ("compat.xgboost:XGBoostTrainer", "ray.train.xgboost:XGBoostTrainer"),
        ("compat.lightgbm:LightGBMTrainer", "ray.train.lightgbm:LightGBMTrainer"),
    ],
)
def test_compats_trainers_are_instances_of_rays(ours: str, theirs: str) -> None:
    import importlib

    def load(path: str) -> Any:
        module, name = path.split(":")
        return getattr(importlib.import_module(module), name)

    assert isinstance(load(ours)(lambda config: None), load(theirs))


def test_rays_tuner_takes_a_compat_trainer_as_v1s_takes_its_own(tmp_path: Path) -> None:
    """As a V1 trainer: the experiment runs under the trainer's RunConfig when the Tuner has
    none (compat put it elsewhere), and a RunConfig in param_space is Ray's ValueError (compat's
    trainer took it)."""
    from ray import tune

    from compat.torch import TorchTrainer

    trainer = TorchTrainer(lambda config: None, run_config=compat.RunConfig(name="exp", storage_path=str(tmp_path)))
    run = tune.Tuner(trainer)._local_tuner.get_run_config()
    assert (run.name, run.storage_path) == ("exp", str(tmp_path))
    with pytest.raises(ValueError, match="`RunConfig` cannot be tuned as part of the `param_space`"):
        tune.Tuner(trainer, param_space={"run_config": compat.RunConfig()})


@pytest.mark.parametrize("module", ["xgboost", "lightgbm"])
def test_a_tree_trainers_get_model_of_no_checkpoint_says_what_to_pass(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It failed with ``AttributeError: 'NoneType' object has no attribute 'as_directory'``."""
    import importlib

    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0")  # V1's own classmethod: no V1-only warning

    trainer = {"xgboost": "XGBoostTrainer", "lightgbm": "LightGBMTrainer"}[module]
    with pytest.raises(ValueError, match=r"get_model\(checkpoint\) got None: pass the Checkpoint"):
        getattr(importlib.import_module(f"compat.{module}"), trainer).get_model(None)


def test_compats_warnings_are_rays_deprecation_warnings() -> None:
    """Filters and ``pytest.warns`` written against Ray's warning class catch compat's."""
    from ray.util.annotations import RayDeprecationWarning

    from compat_core.migration import usage

    with pytest.warns(RayDeprecationWarning, match="trainer-resources"):
        usage.relied_on("trainer-resources", "", mode=usage.switch.mode_of(usage.switch.V2))


@pytest.mark.parametrize("module", ["xgboost", "lightgbm"])
def test_a_tree_trainers_get_model_is_v1_only_and_raises_in_strict_mode_as_raw_v2(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Raw V2 removed it (DeprecationWarning raised); compat keeps it, warning under v2."""
    import importlib

    from compat_core.migration import usage

    trainer = getattr(
        importlib.import_module(f"compat.{module}"), {"xgboost": "XGBoost", "lightgbm": "LightGBM"}[module] + "Trainer"
    )
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1")
    monkeypatch.setattr(usage, "_warned", set())
    with pytest.warns(compat.V1OnlyWarning, match=r"\[tree-get-model\]"), pytest.raises(ValueError):
        trainer.get_model(None)
    monkeypatch.setenv("COMPAT_STRICT", "1")
    with pytest.raises(DeprecationWarning, match=r"\[tree-get-model\].*strict mode"):
        trainer.get_model(None)


@pytest.mark.parametrize("verbose", [0, 2])
def test_a_given_verbose_is_v1_only_and_raises_in_strict_mode_as_raw_v2(
    verbose: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verbose=0`` too (it equals False, which a run that sets nothing has for log_to_file)."""
    from ray.train.v2.api.config import RunConfig as RawV2RunConfig

    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1")
    monkeypatch.setenv("COMPAT_STRICT", "1")
    with pytest.raises(DeprecationWarning, match=r"`RunConfig\(verbose\)` is deprecated") as theirs:
        RawV2RunConfig(verbose=verbose)
    with pytest.raises(compat.V1OnlyWarning, match=r"strict mode") as ours:
        compat.RunConfig(verbose=verbose)
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0]
    compat.RunConfig()  # nothing given, nothing raised


def test_compat_lists_no_module_it_imported_for_itself() -> None:
    assert not {"os", "Any", "where"} & set(dir(compat))


def _losses(config: dict[str, Any]) -> None:
    """Three reports with checkpoints, through ``ray.train``'s functions or compat's
    (``config["api"]``: a training loop's module still on compat, run by Ray's trainer)."""
    import tempfile

    api = compat if (config or {}).get("api") == "compat" else ray.train
    rank, resumed = api.get_context().get_world_rank(), api.get_checkpoint() is not None
    for step in range(3):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "step").write_text(str(step))
            metrics = {"loss": 1.0 / (step + 1), "step": step, "rank": rank, "resumed": resumed}
            api.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(d))


def _observed(result: Any, storage: Path) -> dict[str, Any]:
    run = Path(result.path)
    return {
        "metrics": {k: result.metrics[k] for k in ("loss", "step", "rank", "resumed")},
        "error": result.error,
        "kept": sorted(m["step"] for _, m in result.best_checkpoints),  # num_to_keep=2, by loss
        "under storage": run.is_relative_to(storage),
        "is Ray's": isinstance(result, ray.train.Result),
    }


@pytest.mark.ray
def test_rays_trainer_runs_with_compats_configs_as_with_its_own(ray_cluster: None, tmp_path: Path) -> None:
    """A trainer module graduated to ``ray.train.torch.TorchTrainer``, its configs still built
    by a shared module on compat, and its training loop's module still calling compat's
    ``report``/``get_context``/``get_checkpoint`` (Ray's own answer there): the run observes
    what it observes with Ray's configs and functions."""
    seen = {}
    for name, train, api in (("ray", ray.train, "ray"), ("compat", compat, "ray"), ("compat loop", compat, "compat")):
        made = configs(train, tmp_path, name.replace(" ", "-"))
        if not V2:  # V1's trainer actor takes a CPU of its own: one worker's fits on 2 cores
            made["scaling_config"] = dataclasses.replace(made["scaling_config"], trainer_resources={"CPU": 0})
        result = RayTorchTrainer(_losses, train_loop_config={"api": api}, **made).fit()
        seen[name] = _observed(result, tmp_path)
    assert seen["compat"] == seen["ray"] == seen["compat loop"]
    assert seen["ray"]["kept"] == [0, 1] and seen["ray"]["under storage"]  # the highest losses: "max"


def _first_line(error: BaseException) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x", str(error).splitlines()[0])


@pytest.mark.ray
def test_a_run_ray_refuses_before_training_raises_rays_own_error_as_raw_ray(ray_cluster: None, tmp_path: Path) -> None:
    """Raw Ray's ``fit()`` raises these as they are (not as training failures), in both
    settings: a training function that cannot be pickled, Ray's ``TypeError`` naming it (not
    compat's wrapper); under V1, ``checkpoint_frequency`` on a function trainable's config.
    Nothing else is said: no warning that the refused run will not restore."""
    import threading
    import warnings

    from compat.torch import TorchTrainer

    lock = threading.Lock()

    def holds_a_lock() -> None:
        with lock:
            pass

    raised: dict[str, list[tuple[type, str, list[str]]]] = {}
    for name, train, trainer in (("ray", ray.train, RayTorchTrainer), ("compat", compat, TorchTrainer)):
        made = configs(train, tmp_path, f"refused-{name}")
        runs: list[tuple[Any, dict[str, Any]]] = [(holds_a_lock, made)]
        if not V2:  # V2 has no checkpoint_frequency (compat's V1-only warning under v2)
            frequency = train.CheckpointConfig(checkpoint_frequency=2)
            runs.append(
                (_losses, {**made, "run_config": dataclasses.replace(made["run_config"], checkpoint_config=frequency)})
            )
        raised[name] = []
        for function, arguments in runs:
            with warnings.catch_warnings(record=True) as caught, pytest.raises(Exception) as error:
                warnings.simplefilter("always")
                trainer(function, **arguments).fit()
            said = [str(w.message) for w in caught if "restore" in str(w.message)]
            raised[name].append((type(error.value), _first_line(error.value), said))
    assert raised["compat"] == raised["ray"]
    assert raised["ray"][0][0] is TypeError and "holds_a_lock" in raised["ray"][0][1]


def _deprecations(call: Any, *args: Any) -> list[tuple[str, str]]:
    """The Ray deprecation warnings ``call(*args)`` raised: (category, message), whatever it raised."""
    import warnings

    from ray.util.annotations import RayDeprecationWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.suppress(Exception):
            call(*args)
    return [(w.category.__name__, str(w.message)) for w in caught if issubclass(w.category, RayDeprecationWarning)]


def test_under_v1_compat_raises_ray_v1s_own_deprecation_warnings_where_it_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Raw V1's trainer warns when made with ``metadata=``, ``resume_from_checkpoint=`` or a
    Tune option, and at ``restore``/``can_restore``: ``pytest.warns(RayDeprecationWarning)``
    and filters written against Ray see compat's the same (at the user's line)."""
    from ray.air.config import RunConfig as V1RunConfig
    from ray.train.torch.torch_trainer import TorchTrainer as RawV1TorchTrainer

    from compat.torch import TorchTrainer

    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0")
    checkpoint = ray.train.Checkpoint(str(tmp_path))
    calls = {
        "metadata": lambda trainer, run: trainer(_losses, metadata={"a": 1}),
        "resume_from_checkpoint": lambda trainer, run: trainer(_losses, resume_from_checkpoint=checkpoint),
        "verbose": lambda trainer, run: trainer(_losses, run_config=run(verbose=0)),
        "stop and log_to_file": lambda trainer, run: trainer(_losses, run_config=run(stop={"x": 1}, log_to_file=True)),
        "can_restore": lambda trainer, run: trainer.can_restore(str(tmp_path)),
        "restore": lambda trainer, run: trainer.restore(str(tmp_path)),
        "nothing V1-only": lambda trainer, run: trainer(_losses, run_config=run(name="plain")),
    }
    for name, call in calls.items():
        theirs = _deprecations(call, RawV1TorchTrainer, V1RunConfig)
        ours = _deprecations(call, TorchTrainer, compat.RunConfig)
        if name == "restore":  # Ray 2.44's asks can_restore on the way, and warns for both: Ray's messages
            assert ours and set(ours) <= set(theirs), name
        else:
            assert ours == theirs, name
        assert bool(theirs) == (name != "nothing V1-only"), name
    monkeypatch.setenv("RAY_TRAIN_ENABLE_V2_MIGRATION_WARNINGS", "0")  # Ray's own switch, obeyed
    assert _deprecations(lambda: TorchTrainer(_losses, metadata={"a": 1})) == []


@pytest.mark.parametrize("method", ["get_trial_name", "get_trial_id", "get_trial_dir", "get_trial_resources"])
def test_v1_semantics_on_v2s_engine_raise_ray_v1s_warning_at_the_trial_api(method: str) -> None:
    """A worker's ``get_context().get_trial_dir()`` (and the rest of V1's trial API) warns as
    raw V1's context does, on V2's engine too, where compat answers it itself."""
    import types

    from compat._context import TrainContext
    from compat_core import switch

    storage = types.SimpleNamespace(experiment_fs_path="/runs/job/TorchTrainer_1a2b3_00000_0_2026-11-28_10-00-00")
    engine_context = types.SimpleNamespace(get_storage=lambda: storage, **{method: lambda: pytest.fail("V2's asked")})
    ours = _deprecations(getattr(TrainContext(engine_context, switch.Mode(switch.V1, switch.V2)), method))
    theirs = _deprecations(getattr(ray.train.context.TrainContext(), method))  # V1's, outside a run: warns, then fails
    assert ours == theirs and len(theirs) == 1


def _local_observations(train: Any, trainer_cls: Any, tmp_path: Path) -> dict[str, Any]:
    """What a program observes of ``ScalingConfig(num_workers=0)``: under V2, its local mode (the
    training function in the driver's process); under V1, the error ``fit()`` raises."""
    inside: dict[str, Any] = {}

    def train_fn(config: dict[str, Any]) -> int:
        context = train.get_context()
        inside.update(rank=context.get_world_rank(), size=context.get_world_size(), pid=os.getpid())
        inside["resumed"] = train.get_checkpoint()
        for step in range(config["steps"]):
            if step == 1:
                directory = tmp_path / "checkpoint"
                directory.mkdir(parents=True)
                (directory / "step").write_text(str(step))
                train.report({"step": step}, checkpoint=ray.train.Checkpoint.from_directory(str(directory)))
            else:
                train.report({"step": step})
        return 7

    trainer = trainer_cls(
        train_fn,
        train_loop_config={"steps": 3},
        scaling_config=train.ScalingConfig(num_workers=0),
        run_config=train.RunConfig(name="local", storage_path=str(tmp_path / "storage")),
    )
    seen: dict[str, Any] = {"local": trainer.running_in_local_mode} if V2 and facts.LOCAL_MODE else {}
    try:
        result = trainer.fit()
    except Exception as error:
        return {**seen, "raised": (type(error), _first_line(error))}
    checkpoint = None if result.checkpoint is None else (Path(result.checkpoint.path) / "step").read_text()
    return {
        **seen,
        "inside": inside,
        "result": (result.metrics, checkpoint, result.path, result.error, result.return_value),
        "frame": result.metrics_dataframe,
        "is_rays": isinstance(result, ray.train.Result),
    }


def test_a_run_without_workers_runs_as_raw_ray_runs_it(ray_cluster: None, tmp_path: Path) -> None:
    """``ScalingConfig(num_workers=0)``: raw V2 runs the training function in the driver's process
    (its local mode, from Ray 2.50: the last report's metrics and the function's return value);
    raw V1, and V2 before 2.50, refuse the run at ``fit()``. compat observes the same in the
    same setting."""
    from compat.torch import TorchTrainer

    raw = _local_observations(ray.train, RayTorchTrainer, tmp_path / "ray")
    ours = _local_observations(compat, TorchTrainer, tmp_path / "compat")
    if V2 and not facts.LOCAL_MODE:  # raw V2's controller refuses it: a ValueError; compat's says what to do
        assert issubclass(raw["raised"][0], ValueError) and ours["raised"][0] is ValueError
        assert "needs Ray 2.50 or newer" in ours["raised"][1]
        return
    assert ours == raw
    if V2 and facts.LOCAL_MODE:
        assert raw["inside"] == {"rank": 0, "size": 1, "pid": os.getpid(), "resumed": None}
        # Ray 2.60's local mode: the last report's metrics, no run directory and, although a
        # checkpoint was reported, none (its Result takes the checkpoint a run would resume from).
        assert raw["result"] == ({"step": 2}, None, None, None, 7) and raw["local"] and raw["is_rays"]
    else:
        assert raw["raised"][0] is ValueError and "num_workers" in raw["raised"][1]
