"""``tune.Tuner(compat_trainer, param_space=...)`` on real Ray Tune, in both modes: the
V1 way of running a hyperparameter search, which raw V2 rejects."""

from __future__ import annotations

import os
import tempfile

import pytest

import compat as train
from compat import _tune

EPOCHS = 4


def _train_fn(config):
    for epoch in range(EPOCHS):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "epoch"), "w") as f:
                f.write(str(epoch))
            train.report(
                {"loss": config["lr"] * (EPOCHS - epoch), "epoch": epoch}, checkpoint=train.Checkpoint.from_directory(d)
            )


@pytest.mark.ray
@pytest.mark.one_pass
def test_tuner_runs_a_compat_trainer_with_asha_in_both_modes(backend, storage) -> None:
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    trainer = train.torch.TorchTrainer(_train_fn, scaling_config=train.ScalingConfig(num_workers=1))
    grid = tune.Tuner(
        trainer,
        param_space={"train_loop_config": {"lr": tune.grid_search([0.1, 1.0])}},
        tune_config=tune.TuneConfig(metric="loss", mode="min", scheduler=ASHAScheduler(max_t=EPOCHS, grace_period=1)),
        run_config=tune.RunConfig(name="sweep", storage_path=storage),
    ).fit()

    assert len(grid) == 2 and not grid.errors
    best = grid.get_best_result()
    assert best.config == {"train_loop_config": {"lr": 0.1}}
    assert (best.metrics["loss"], best.metrics["epoch"]) == (pytest.approx(0.1), EPOCHS - 1)
    with open(os.path.join(best.checkpoint.path, "epoch")) as f:
        assert f.read() == str(EPOCHS - 1)  # the trial's last checkpoint, as reported
    # The scheduler saw every epoch of the best trial, as a V1 Trainer's trial reports them.
    assert list(best.metrics_dataframe["epoch"]) == list(range(EPOCHS))


def test_param_space_merges_like_v1_and_names_unknown_keys() -> None:
    trainer = train.torch.TorchTrainer(
        _train_fn, train_loop_config={"lr": 1.0, "opt": {"momentum": 0.9, "nesterov": True}}
    )
    trial = _tune.with_sample(
        trainer, {"train_loop_config": {"opt": {"momentum": 0.5}}, "scaling_config": {"num_workers": 2}}
    )
    assert trial.train_loop_config == {"lr": 1.0, "opt": {"momentum": 0.5, "nesterov": True}}
    assert trial.scaling_config.num_workers == 2
    assert trainer.train_loop_config["opt"]["momentum"] == 0.9  # the trainer itself is untouched
    with pytest.raises(ValueError, match=r"got 'lr'.*under 'train_loop_config'"):
        _tune.with_sample(trainer, {"lr": 0.1})
    with pytest.raises(ValueError, match=r"got 'params'"):
        _tune.with_sample(trainer, {"params": {"eta": 0.1}})  # only the tree trainers' V1 form has params
