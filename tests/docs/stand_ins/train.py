"""The docs' `train.py`: the README's program with the `--epochs` its commands pass."""

import argparse

import compat as train
from compat.torch import TorchTrainer


def train_func(config):
    for epoch in range(config["epochs"]):
        train.report({"loss": 1.0 / (epoch + 1), "epoch": epoch})


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
epochs = parser.parse_args().epochs
result = TorchTrainer(
    train_func, train_loop_config={"epochs": epochs}, scaling_config=train.ScalingConfig(num_workers=2)
).fit()
print(train.backend(), result.metrics)
