"""compat.tensorflow against raw Ray, in the process's setting: a Keras model trained with
``MultiWorkerMirroredStrategy`` on two workers, reporting through Ray's Keras callback
(``ReportCheckpointCallback``, a checkpoint each epoch) and with ``train.report`` directly."""

from __future__ import annotations

import importlib
import os
import re

import numpy as np
import pytest

# Ray's TensorFlow trainer trains with MultiWorkerMirroredStrategy, which Keras 3's fit() does not
# take (a PerReplica input error): Keras 2 (tf-keras), as Ray's TensorFlow examples use. Set here,
# before TensorFlow reads it: Ray's workers import this module before they run its training function.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
pytest.importorskip("tensorflow", reason="TensorFlow is not installed here (pip install tensorflow-cpu)")
pytest.importorskip("tf_keras", reason="tf-keras is not installed here (pip install tf-keras)")

import compat as train  # noqa: E402
import compat.tensorflow  # noqa: E402
from compat.tensorflow.keras import ReportCheckpointCallback  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.extended_rerun]  # CI: each setting once, in its own pass

EPOCHS = 2


def keras_loop(config):
    import tensorflow as tf

    api = importlib.import_module(config["api"])
    tf.keras.utils.set_random_seed(0)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = api.get_context().get_world_rank()
    x = np.random.default_rng(rank).normal(size=(64, 4)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF  # one shard each
    data = data.with_options(options)
    model.fit(data, epochs=EPOCHS, verbose=0, callbacks=[ReportCheckpointCallback(metrics="loss")])
    api.report({"done": 1.0, "rank": rank})  # a free-floating report: V1 keeps it, V2 drops it


def observe(api_name: str, trainer_class, storage: str) -> dict:
    trainer = trainer_class(
        keras_loop,
        train_loop_config={"api": api_name},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(name=f"tf-{api_name}", storage_path=storage),
    )
    result = trainer.fit()
    frame = result.metrics_dataframe
    model = compat.tensorflow.TensorflowCheckpoint(result.checkpoint.path).get_model() if result.checkpoint else None
    return {
        "metrics": sorted(k for k in (result.metrics or {}) if k in ("loss", "done", "rank")),
        "rows": None if frame is None else len(frame),
        "losses": None if frame is None or "loss" not in frame else int(frame["loss"].notna().sum()),
        # V2 names checkpoints by their time: compared by form
        "checkpoint": None
        if result.checkpoint is None
        else re.sub(r"_\d{4}-\d\d-\d\d_[\d.-]+$", "_<time>", os.path.basename(result.checkpoint.path)),
        "model_inputs": None if model is None else list(model.input_shape),
    }


@pytest.mark.parametrize("setting", ["0", "1"])
@pytest.mark.extended_cases("0")  # about a minute a setting; CI: V2's (the default), the full suite both
def test_a_keras_model_trains_as_on_raw_ray(setting: str, ray_cluster, storage, monkeypatch) -> None:
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", setting)
    if setting == "1":
        from ray.train.v2.tensorflow.tensorflow_trainer import TensorflowTrainer as RayTrainer
    else:
        from ray.train.tensorflow.tensorflow_trainer import TensorflowTrainer as RayTrainer  # type: ignore[assignment]
    raw = observe("ray.train", RayTrainer, storage)
    ours = observe("compat", compat.tensorflow.TensorflowTrainer, storage)
    assert ours == raw
    if setting == "0":
        assert raw["checkpoint"] == f"checkpoint_00000{EPOCHS - 1}"  # the callback's: one per epoch
        assert raw["rows"] == EPOCHS + 1 and raw["metrics"] == ["done", "rank"]  # every report, the last
    else:
        assert raw["checkpoint"] == "checkpoint_<time>"
        assert raw["metrics"] == ["loss"]  # the last checkpoint's metrics


def test_compats_trainer_is_rays_in_both_settings(monkeypatch) -> None:
    import ray.train.tensorflow.tensorflow_trainer as v1
    import ray.train.v2.tensorflow.tensorflow_trainer as v2

    trainer = compat.tensorflow.TensorflowTrainer(keras_loop, scaling_config=train.ScalingConfig(num_workers=1))
    assert isinstance(trainer, v1.TensorflowTrainer) and isinstance(trainer, v2.TensorflowTrainer)
