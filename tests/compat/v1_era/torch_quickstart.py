"""Ray 2.7's documented TorchTrainer quickstart, as V1-era code wrote it: ray.air's configs and
session, a report every epoch without a checkpoint, no storage_path (Ray's ~/ray_results)."""

import torch
import torch.nn as nn
from ray.air import ScalingConfig, session
from ray.train.torch import TorchTrainer, prepare_model


def train_loop_per_worker(config):
    torch.manual_seed(0)
    inputs = torch.randn(64, 4)
    labels = inputs.sum(dim=1, keepdim=True)
    model = prepare_model(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        loss = nn.functional.mse_loss(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        session.report({"loss": loss.item(), "epoch": epoch, "rank": session.get_world_rank()})


trainer = TorchTrainer(
    train_loop_per_worker,
    train_loop_config={"lr": 0.1, "epochs": 3},
    scaling_config=ScalingConfig(num_workers=2),
)
result = trainer.fit()
print(result.metrics)
