"""A V1-era job with checkpoints, as Ray 2.7's docs wrote one: ray.air's RunConfig and
CheckpointConfig (a name, no storage_path), session.get_checkpoint() to resume, a checkpoint
every epoch, the best two kept by score."""

import os
import tempfile

from ray.air import CheckpointConfig, RunConfig, ScalingConfig, session
from ray.train import Checkpoint
from ray.train.torch import TorchTrainer


def train_func(config):
    start = 0
    checkpoint = session.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            start = int(open(os.path.join(d, "epoch")).read()) + 1
    for epoch in range(start, config["epochs"]):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "epoch"), "w") as f:
                f.write(str(epoch))
            score = [0.3, 0.9, 0.5, 0.7][epoch]
            session.report({"epoch": epoch, "score": score}, checkpoint=Checkpoint.from_directory(d))


trainer = TorchTrainer(
    train_func,
    train_loop_config={"epochs": 4},
    scaling_config=ScalingConfig(num_workers=2),
    run_config=RunConfig(
        name="checkpointed_job",
        checkpoint_config=CheckpointConfig(num_to_keep=2, checkpoint_score_attribute="score"),
    ),
)
result = trainer.fit()
print(result.metrics)
