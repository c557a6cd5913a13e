"""Ray 2.6-era Tune examples, as written then: function trainables reporting through
``ray.air.session`` (one with an ASHA scheduler and checkpoints, one through
``tune.with_parameters`` without a scheduler). Input of tests/migrate/test_tune.py;
the test migrates a copy and runs it."""

import json
import os
import sys
import tempfile

import ray
from ray import tune
from ray.air import Checkpoint, RunConfig, session
from ray.tune.schedulers import ASHAScheduler


def objective(config):
    start = 0
    checkpoint = session.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as directory:
            with open(os.path.join(directory, "state.json")) as f:
                start = json.load(f)["step"] + 1
    for step in range(start, config["steps"]):
        directory = tempfile.mkdtemp()
        with open(os.path.join(directory, "state.json"), "w") as f:
            json.dump({"step": step}, f)
        session.report({"score": config["a"] * step, "step": step}, checkpoint=Checkpoint.from_directory(directory))


def shifted(config, offset=0):
    for step in range(3):
        session.report({"score": config["a"] + step + offset})


def main(storage_path):
    with_scheduler = tune.Tuner(
        objective,
        param_space={"a": tune.grid_search([1, 2]), "steps": 4},
        tune_config=tune.TuneConfig(scheduler=ASHAScheduler(max_t=4, grace_period=1), metric="score", mode="max"),
        run_config=RunConfig(name="asha", storage_path=storage_path),
    )
    best = with_scheduler.fit().get_best_result()
    plain = tune.Tuner(
        tune.with_parameters(shifted, offset=10),
        param_space={"a": tune.grid_search([1, 2])},
        tune_config=tune.TuneConfig(metric="score", mode="max"),
        run_config=RunConfig(name="plain", storage_path=storage_path),
    )
    results = plain.fit()
    with best.checkpoint.as_directory() as directory:
        with open(os.path.join(directory, "state.json")) as f:
            step = json.load(f)["step"]
    return {
        "best_score": best.metrics["score"],
        "best_rows": len(best.metrics_dataframe),
        "checkpoint_step": step,
        "plain_scores": sorted(r.metrics["score"] for r in results),
        "plain_rows": sorted(len(r.metrics_dataframe) for r in results),
    }


if __name__ == "__main__":
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print("RESULT " + json.dumps(main(sys.argv[1])))
    ray.shutdown()
