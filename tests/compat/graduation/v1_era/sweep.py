"""A learning-rate sweep over the team's trainer: each trial's final loss, the best rate."""

import training
from ray import tune
from ray.air import RunConfig


def sweep(storage):
    tuner = tune.Tuner(
        training.make_trainer(storage, "trial"),
        param_space={"train_loop_config": {"lr": tune.grid_search([0.05, 0.2]), "epochs": 3}},
        tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=1),
        run_config=RunConfig(name="sweep", storage_path=storage),
    )
    grid = tuner.fit()
    best = grid.get_best_result()
    return {
        "best_lr": best.config["train_loop_config"]["lr"],
        "final_loss": {str(r.config["train_loop_config"]["lr"]): r.metrics["loss"] for r in grid},
    }
