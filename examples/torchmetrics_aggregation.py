"""Seed 000: aggregate metrics from every worker with torchmetrics, report with a checkpoint.

Only change from the Ray docs: ``import compat as train`` and ``compat.torch``.
Run: python -m examples.torchmetrics_aggregation   (RAY_TRAIN_V2_ENABLED=0 or 1)
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torchmetrics
from torch.optim import Adam

import compat as train
from compat.torch import TorchTrainer, prepare_model


def train_func(config):
    n = 100
    # Seeded (the Ray docs' version is not) so that runs can be compared: see docs/testing.md.
    torch.manual_seed(config.get("seed", 0))
    rng = np.random.default_rng(train.get_context().get_world_rank())
    X = torch.Tensor(rng.normal(0, 1, size=(n, 4)))
    X_valid = torch.Tensor(rng.normal(0, 1, size=(n, 4)))
    Y = torch.Tensor(rng.uniform(0, 1, size=(n, 1)))
    Y_valid = torch.Tensor(rng.uniform(0, 1, size=(n, 1)))
    model = prepare_model(nn.Linear(4, 1))
    criterion = nn.MSELoss()
    mape = torchmetrics.MeanAbsolutePercentageError()
    mean_valid_loss = torchmetrics.MeanMetric()
    optimizer = Adam(model.parameters(), lr=3e-4)
    for _epoch in range(config["num_epochs"]):
        model.train()
        loss = criterion(model.forward(X), Y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            pred = model(X_valid)
            valid_loss = criterion(pred, Y_valid)
            mean_valid_loss(valid_loss)
            mape(pred, Y_valid)
        metrics = {
            "mape_collected": mape.compute().item(),
            "valid_loss": valid_loss.item(),
            "mean_valid_loss_collected": mean_valid_loss.compute().item(),
        }
        with tempfile.TemporaryDirectory() as temp_checkpoint_dir:
            torch.save(model.state_dict(), os.path.join(temp_checkpoint_dir, "model.pt"))
            train.report(metrics, checkpoint=train.Checkpoint.from_directory(temp_checkpoint_dir))
        mape.reset()
        mean_valid_loss.reset()


def main(storage_path: str | None = None, num_epochs: int = 5) -> train.Result:
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"num_epochs": num_epochs},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage_path),
    )
    result = trainer.fit()
    print(result.metrics["valid_loss"], result.metrics["mean_valid_loss_collected"])
    return result


if __name__ == "__main__":
    main()
