"""Ray 2.7's documented TorchTrainer quickstart, as V1-era code wrote it: ray.air's configs and
session, a report every epoch (a checkpoint every other one, the best two kept by loss, resumed
from session.get_checkpoint()), no storage_path (Ray's ~/ray_results)."""

import os
import tempfile

import torch
import torch.nn as nn
from ray.air import CheckpointConfig, RunConfig, ScalingConfig, session
from ray.train import Checkpoint
from ray.train.torch import TorchTrainer, prepare_model


def train_loop_per_worker(config):
    torch.manual_seed(0)
    inputs = torch.randn(64, 4)
    labels = inputs.sum(dim=1, keepdim=True)
    model = prepare_model(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    start = 0
    checkpoint = session.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            start = int(open(os.path.join(d, "epoch")).read()) + 1
    for epoch in range(start, config["epochs"]):
        loss = nn.functional.mse_loss(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metrics = {"loss": loss.item(), "epoch": epoch, "rank": session.get_world_rank()}
        if epoch % 2 == 0:
            session.report(metrics)
            continue
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "epoch"), "w") as f:
                f.write(str(epoch))
            session.report(metrics, checkpoint=Checkpoint.from_directory(d))


trainer = TorchTrainer(
    train_loop_per_worker,
    train_loop_config={"lr": 0.1, "epochs": 6},
    scaling_config=ScalingConfig(num_workers=2),
    run_config=RunConfig(
        name="quickstart",
        checkpoint_config=CheckpointConfig(
            num_to_keep=2, checkpoint_score_attribute="loss", checkpoint_score_order="min"
        ),
    ),
)
result = trainer.fit()
print(result.metrics)
