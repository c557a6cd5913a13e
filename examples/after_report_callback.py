"""Seed 000 (V2 section): free-floating metrics from every worker, read in ``after_report``.

The Ray docs version asserts ``RAY_TRAIN_V2_ENABLED == "1"``; with compat it runs under
both settings. The callback runs outside the driver, so it writes what it sees to a file.
Run: python -m examples.after_report_callback
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import compat as train
from compat.torch import TorchTrainer


def train_fn_per_worker(config):
    # Free-floating metrics can be accessed from the callback below.
    train.report({"rank": train.get_context().get_world_rank()})


class CustomMetricsCallback(train.UserCallback):
    def __init__(self, path: str) -> None:
        self.path = path

    def after_report(self, run_context, metrics: list[dict[str, Any]], checkpoint: train.Checkpoint | None):
        rank_0_metrics = metrics[0]
        print(rank_0_metrics)
        with open(self.path, "a") as f:  # Ex: write metrics to a file...
            f.write(json.dumps(metrics) + "\n")


def main(storage_path: str | None = None) -> tuple[train.Result, list[list[dict[str, Any]]]]:
    log = os.path.join(storage_path or tempfile.mkdtemp(), "after_report.jsonl")
    trainer = TorchTrainer(
        train_fn_per_worker,
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage_path, callbacks=[CustomMetricsCallback(log)]),
    )
    result = trainer.fit()
    with open(log) as f:
        calls = [json.loads(line) for line in f]
    print("after_report calls:", calls)
    return result, calls


if __name__ == "__main__":
    main()
