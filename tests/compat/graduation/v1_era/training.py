"""The training loop and the trainer the jobs run."""

import os
import tempfile

import callbacks
import settings
import torch
from ray.air import session
from ray.train import Checkpoint
from ray.train.torch import TorchTrainer


def train_loop(config):
    torch.manual_seed(0)
    inputs = torch.randn(32, 4)
    labels = inputs.sum(dim=1, keepdim=True)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        loss = torch.nn.functional.mse_loss(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with tempfile.TemporaryDirectory() as d:
            torch.save(model.state_dict(), os.path.join(d, "model.pt"))
            session.report({"loss": loss.item(), "epoch": epoch}, checkpoint=Checkpoint.from_directory(d))


def make_trainer(storage, name, lr=0.1):
    log = callbacks.EpochLog(f"{storage}/{name}.log")
    return TorchTrainer(
        train_loop,
        train_loop_config={"lr": lr, "epochs": 3},
        scaling_config=settings.SCALING,
        run_config=settings.run_config(storage, name, callbacks=[log]),
    )
