"""Reads result.metrics after free-floating reports: fine under V1, a TypeError under V2."""

import tempfile

import compat as train
from compat.torch import TorchTrainer


def train_func(config):
    for epoch in range(2):
        train.report({"loss": 1.0 / (epoch + 1)})


result = TorchTrainer(train_func, run_config=train.RunConfig(storage_path=tempfile.mkdtemp())).fit()
print("final loss:", result.metrics["loss"])  # None under V2: TypeError
