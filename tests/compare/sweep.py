"""two_fits.py's fits first (free-floating reports, then checkpoints with validation); then a
grid of two trials, each a run of two workers, on a cluster of two CPUs: under V1 a trial
reserves its workers, so the trials run one at a time; under V2 both start at once. Then a fit
of free-floating reports whose result.metrics the script reads: fine under V1, a TypeError under
V2 (its metrics are None), so the script fails under V2 only. (One script: each run of compare
starts a cluster per setting.)"""

import tempfile

import two_fits  # beside this script
from ray import tune

import compat as train
from compat.torch import TorchTrainer


def loop(config):
    for epoch in range(2):
        train.report({"loss": config["lr"] / (epoch + 1), "epoch": epoch})


def free_floating(config):
    for epoch in range(2):
        train.report({"loss": 1.0 / (epoch + 1)})


if __name__ == "__main__":
    import ray

    ray.init(num_cpus=2, include_dashboard=False)
    two_fits.main([])
    trainer = TorchTrainer(loop, scaling_config=train.ScalingConfig(num_workers=2))
    grid = tune.Tuner(
        trainer,
        param_space={"train_loop_config": {"lr": tune.grid_search([0.1, 0.2])}},
        run_config=train.RunConfig(name="lr_sweep", storage_path=tempfile.mkdtemp()),
    ).fit()
    print("best:", grid.get_best_result(metric="loss", mode="min").config)
    result = TorchTrainer(free_floating, run_config=train.RunConfig(storage_path=tempfile.mkdtemp())).fit()
    print("final loss:", result.metrics["loss"])  # None under V2: TypeError
