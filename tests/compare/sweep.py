"""A grid of two trials, each a run of two workers, on a cluster of two CPUs: under V1 a trial
reserves its workers, so the trials run one at a time; under V2 both start at once."""

import tempfile

from ray import tune

import compat as train
from compat.torch import TorchTrainer


def loop(config):
    for epoch in range(2):
        train.report({"loss": config["lr"] / (epoch + 1), "epoch": epoch})


if __name__ == "__main__":
    import ray

    ray.init(num_cpus=2, include_dashboard=False)
    trainer = TorchTrainer(loop, scaling_config=train.ScalingConfig(num_workers=2))
    grid = tune.Tuner(
        trainer,
        param_space={"train_loop_config": {"lr": tune.grid_search([0.1, 0.2])}},
        run_config=train.RunConfig(name="lr_sweep", storage_path=tempfile.mkdtemp()),
    ).fit()
    print("best:", grid.get_best_result(metric="loss", mode="min").config)
