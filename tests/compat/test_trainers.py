"""compat's other trainers on real Ray, in both modes: XGBoost and LightGBM in V1's form
(``params=``/``label_column=``, which Ray's V2 trainers reject) and V2's (a training
function), ``DataParallelTrainer`` with any backend config, and the worker-side names
``ray.train`` has (``get_all_reported_checkpoints``, ``compat.torch``'s helpers)."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pandas as pd
import pytest

import compat as train
from compat_core import switch
from compat_core.releases import facts

# extended_rerun: V1's trainers on V2's engine are tests/compat/test_v1_engine.py's in CI.
pytestmark = [pytest.mark.ray, pytest.mark.one_pass, pytest.mark.extended_rerun]

ROUNDS = 4


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x1": rng.normal(size=160), "x2": rng.normal(size=160)})
    df["y"] = (df.x1 + 0.5 * df.x2 > 0).astype(int)
    return df[:120].reset_index(drop=True), df[120:].reset_index(drop=True)


def _datasets(frames):
    import ray.data

    return {"train": ray.data.from_pandas(frames[0]), "valid": ray.data.from_pandas(frames[1])}


def _xgboost_fn(config):
    import xgboost

    from compat.xgboost import RayTrainReportCallback

    shards = {name: train.get_dataset_shard(name).materialize().to_pandas() for name in ("train", "valid")}
    matrices = {name: xgboost.DMatrix(df.drop("y", axis=1), label=df["y"]) for name, df in shards.items()}
    xgboost.train(
        config,
        matrices["train"],
        num_boost_round=ROUNDS,
        evals=[(matrices["train"], "train"), (matrices["valid"], "valid")],
        callbacks=[RayTrainReportCallback()],
    )


def _lightgbm_fn(config):
    import lightgbm

    from compat import lightgbm as compat_lightgbm
    from compat.lightgbm import RayTrainReportCallback, get_network_params

    # Ray 2.56+ has a helper for pandas dtypes LightGBM rejects; this data has none of them.
    normalize = getattr(compat_lightgbm, "normalize_pandas_for_lightgbm", lambda frame: frame)
    shards = {name: normalize(train.get_dataset_shard(name).materialize().to_pandas()) for name in ("train", "valid")}
    sets = {name: lightgbm.Dataset(df.drop("y", axis=1), label=df["y"]) for name, df in shards.items()}
    params = {**config, **get_network_params()}
    if facts.LIGHTGBM_DATA_PARALLEL:  # what Ray's V1-form function sets, from 2.52 (compat/releases.py)
        params.update(tree_learner="data_parallel", pre_partition=True)
    lightgbm.train(
        params,
        sets["train"],
        num_boost_round=ROUNDS,
        valid_sets=[sets["train"], sets["valid"]],
        valid_names=["train", "valid"],
        callbacks=[RayTrainReportCallback()],
    )


XGB_PARAMS = {"objective": "binary:logistic", "eval_metric": ["logloss"], "tree_method": "hist"}
LGB_PARAMS = {"objective": "binary", "metric": "binary_logloss", "verbose": -1}


# CI runs lightgbm under v2 (and the V1 form under v2 below); the full suite all four.
@pytest.mark.extended_cases("v2-xgboost", "v1")
@pytest.mark.parametrize(
    ("kind", "params", "train_fn", "metric"),
    [
        ("xgboost", XGB_PARAMS, _xgboost_fn, "valid-logloss"),
        ("lightgbm", LGB_PARAMS, _lightgbm_fn, "valid-binary_logloss"),
    ],
)
def test_tree_trainer_runs_both_forms_with_the_same_metrics_and_models(
    backend, storage, frames, kind, params, train_fn, metric
) -> None:
    module = __import__(f"compat.{kind}", fromlist=["_"])
    trainer_cls = module.XGBoostTrainer if kind == "xgboost" else module.LightGBMTrainer
    scaling = train.ScalingConfig(num_workers=2)
    v1_form = trainer_cls(
        params=params,
        label_column="y",
        num_boost_round=ROUNDS,
        datasets=_datasets(frames),
        scaling_config=scaling,
        run_config=train.RunConfig(name="v1-form", storage_path=storage),
    ).fit()
    v2_form = trainer_cls(
        train_fn,
        train_loop_config=params,
        datasets=_datasets(frames),
        scaling_config=scaling,
        run_config=train.RunConfig(name="v2-form", storage_path=storage),
    ).fit()

    for result in (v1_form, v2_form):
        assert {"train-" + metric.split("-", 1)[1], metric} <= set(result.metrics)
        booster = trainer_cls.get_model(result.checkpoint)
        rounds = booster.num_boosted_rounds() if kind == "xgboost" else booster.current_iteration()
        assert rounds == ROUNDS
    # Same data, same parameters, same library: the two forms train the same model.
    assert v1_form.metrics[metric] == pytest.approx(v2_form.metrics[metric])
    features = frames[1].drop("y", axis=1)
    if kind == "xgboost":
        import xgboost

        features = xgboost.DMatrix(features)
    np.testing.assert_allclose(
        trainer_cls.get_model(v1_form.checkpoint).predict(features),
        trainer_cls.get_model(v2_form.checkpoint).predict(features),
    )
    # One report per boosting round (XGBoost's callback adds one for the final checkpoint).
    # V1 keeps each of rank 0's; V2 only the checkpointed one; compat every worker's, both modes.
    reports = ROUNDS + 1 if kind == "xgboost" else ROUNDS
    for result in (v1_form, v2_form):
        assert len(result.metrics_dataframe) == (reports if backend == "v1" else 1)
        assert len(result.worker_metrics_dataframe) == 2 * reports


def test_tree_trainer_v1_form_checkpoint_frequency_works_in_both_modes(backend, storage, frames) -> None:
    from compat.xgboost import XGBoostTrainer

    result = XGBoostTrainer(
        params=XGB_PARAMS,
        label_column="y",
        num_boost_round=ROUNDS,
        datasets=_datasets(frames),
        run_config=train.RunConfig(
            storage_path=storage,
            checkpoint_config=train.CheckpointConfig(checkpoint_frequency=2, checkpoint_at_end=False),
        ),
    ).fit()
    # Rounds 2 and 4 are checkpointed by the report callback under either engine, and the
    # option is not a V1-only usage here: the callback consumes it.
    assert len(result.reported_checkpoints) == 2
    assert "checkpoint-frequency" not in {u.kind for u in result.v1_usage}


def test_tree_trainers_reject_mixed_and_incomplete_forms() -> None:
    from compat.lightgbm import LightGBMTrainer
    from compat.xgboost import XGBoostTrainer

    with pytest.raises(ValueError, match="label_column="):
        XGBoostTrainer(params=XGB_PARAMS, datasets={"train": object()})
    with pytest.raises(ValueError, match=r"datasets=\{'train'"):
        LightGBMTrainer(params=LGB_PARAMS, label_column="y", datasets={"valid": object()})
    with pytest.raises(TypeError, match="params=, num_boost_round=: those belong to the V1 form"):
        XGBoostTrainer(_xgboost_fn, params=XGB_PARAMS, num_boost_round=3)
    with pytest.raises(TypeError, match="train_loop_config= goes with a training function"):
        LightGBMTrainer(train_loop_config={}, label_column="y", datasets={"train": object()})


def _data_parallel_fn(config):
    import torch.distributed as dist

    train.report(
        {"distributed": dist.is_available() and dist.is_initialized(), "rank": train.get_context().get_world_rank()}
    )


@pytest.mark.parametrize("backend_config", ["BackendConfig", "TorchConfig"])
def test_data_parallel_trainer_takes_any_backend_config(backend, storage, backend_config) -> None:
    config = train.BackendConfig() if backend_config == "BackendConfig" else train.torch.TorchConfig()
    result = train.DataParallelTrainer(
        _data_parallel_fn,
        backend_config=config,
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage),
    ).fit()
    frame = result.worker_metrics_dataframe
    assert sorted(frame["rank"]) == [0, 1]
    # Only the torch backend sets up a process group: the config really reached the engine.
    assert set(frame["distributed"]) == {backend_config == "TorchConfig"}


def _reporting_fn(config):
    import torch

    model = train.torch.prepare_model(torch.nn.Linear(2, 1))
    optimizer = train.torch.prepare_optimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    train.torch.enable_reproducibility(0)
    train.torch.backward(model(torch.ones(4, 2)).sum())
    optimizer.step()
    devices = [str(d) for d in train.torch.get_devices()]
    for step in range(3):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "step"), "w") as f:
                f.write(str(step))
            train.report({"step": step}, checkpoint=train.Checkpoint.from_directory(d))
    seen = train.get_all_reported_checkpoints()
    preemption = train.get_preemption_info()  # a barrier under V2: every rank calls it
    return {
        "steps": [r.metrics["step"] for r in seen],
        "statuses": {r.status for r in seen},
        "stored": [open(os.path.join(r.checkpoint.path, "step")).read() for r in seen],
        "devices": devices,
        "preemption": preemption,
    }


def test_get_all_reported_checkpoints_and_torch_helpers_answer_in_both_modes(backend, storage) -> None:
    result = train.torch.TorchTrainer(
        _reporting_fn,
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage, checkpoint_config=train.CheckpointConfig(num_to_keep=2)),
    ).fit()
    seen = result.return_value
    # The run keeps two checkpoints (num_to_keep): the call lists those, oldest first.
    assert seen["steps"] == [1, 2]
    assert seen["stored"] == ["1", "2"]
    assert seen["statuses"] == {train.CheckpointStatus.COMMITTED}
    assert seen["devices"] == ["cpu"]
    assert seen["preemption"] is None
    assert "torch-amp" in {u.kind for u in result.v1_usage}


def test_get_all_reported_checkpoints_outside_a_worker_says_where_to_call_it() -> None:
    with pytest.raises(train.NotInTrainingFunctionError, match="get_all_reported_checkpoints"):
        train.get_all_reported_checkpoints()


@pytest.mark.skipif(not facts.V2_XGBOOST_CONFIG, reason="before Ray 2.50 both engines take V1's XGBoostConfig")
def test_a_backend_config_made_for_one_engine_reaches_the_other_as_its_own_class() -> None:
    from ray.train.v2.xgboost.config import XGBoostConfig as V2Config
    from ray.train.xgboost.config import XGBoostConfig as V1Config

    from compat_core.integration.frameworks import TORCH, XGBOOST

    v1 = V1Config(xgboost_communicator="rabit")
    as_v2 = XGBOOST.config_for(v1, switch.V2)
    assert type(as_v2) is V2Config and as_v2.xgboost_communicator == "rabit"
    assert type(XGBOOST.config_for(as_v2, switch.V1)) is V1Config
    assert XGBOOST.config_for(v1, switch.V1) is v1 and XGBOOST.config_for(None, switch.V2) is None

    class Mine(V1Config):  # a user's own subclass is passed as given
        pass

    mine = Mine()
    assert XGBOOST.config_for(mine, switch.V2) is mine
    torch_config = train.torch.TorchConfig(backend="gloo")
    assert TORCH.config_for(torch_config, switch.V2) is torch_config  # one class for both engines
