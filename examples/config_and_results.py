"""Seed 004: pass a config to the training function and read the Result.

Kept V1-style on purpose (``compat.session.report`` with no checkpoint, per-epoch rows in
``metrics_dataframe``) so the demo shows what changes when V2 is on: under V2 these
free-floating reports are dropped and ``result.metrics`` is None, and the run's usage
report names each V1-only behaviour. ``result.log_dir`` (seed) no longer exists in Ray;
``result.path`` replaces it.
Run: python -m examples.config_and_results
"""

from __future__ import annotations

import ray.data

import compat as train
from compat import session
from compat.torch import TorchTrainer


def train_func(config):
    shard = session.get_dataset_shard("train")
    rows = sum(len(batch["value"]) for batch in shard.iter_batches(batch_size=16))
    for i in range(config["num_epochs"]):
        session.report({"epoch": i, "rows_seen": rows})


def main(storage_path: str | None = None) -> train.Result:
    dataset = ray.data.range(64).map(lambda row: {"value": row["id"]})
    train_dataset, validation_dataset = dataset.train_test_split(test_size=0.25)
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"num_epochs": 2},
        datasets={"train": train_dataset, "validation": validation_dataset},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage_path),
    )
    result = trainer.fit()
    print("metrics:", result.metrics)
    print("metrics_dataframe:\n", result.metrics_dataframe)
    print("checkpoint:", result.checkpoint, "best_checkpoints:", result.best_checkpoints)
    print("path (was result.log_dir):", result.path)
    print(result.migration_report())
    return result


if __name__ == "__main__":
    main()
