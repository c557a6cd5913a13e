"""A learning-rate sweep over the team's trainer: each trial's final loss, the best rate.

Graduated by hand under V2 (compat warned `tuner-with-trainer`, RTM117): a V2 trainer is not a
Tune trainable, so each trial runs the trainer inside a function, as RTM117's "Use instead" says;
the parameter space moves from train_loop_config to the function's config."""

import settings
import training
from ray import tune
from ray.train import RunConfig
from ray.train.torch import TorchTrainer
from ray.tune.integration.ray_train import TuneReportCallback


def sweep(storage):
    def train_driver(config):
        trial = tune.get_context().get_trial_name()
        TorchTrainer(
            training.train_loop,
            train_loop_config=config,
            scaling_config=settings.SCALING,
            run_config=RunConfig(name=trial, storage_path=storage, callbacks=[TuneReportCallback()]),
        ).fit()

    tuner = tune.Tuner(
        train_driver,
        param_space={"lr": tune.grid_search([0.05, 0.2]), "epochs": 3},
        tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=1),
        run_config=tune.RunConfig(name="sweep", storage_path=storage),
    )
    grid = tuner.fit()
    best = grid.get_best_result()
    return {"best_lr": best.config["lr"], "final_loss": {str(r.config["lr"]): r.metrics["loss"] for r in grid}}
