"""A small training job with two fits: free-floating reports, then checkpoints with validation."""

import argparse
import os
import tempfile

import compat as train
from compat.torch import TorchTrainer


def free_floating(config):
    for epoch in range(config["epochs"]):
        train.report({"loss": 1.0 / (epoch + 1), "epoch": epoch})


def validate(checkpoint):
    with open(os.path.join(checkpoint.path, "w.txt")) as f:
        return {"val_loss": float(f.read()) / 10}


def checkpointed(config):
    for epoch in range(config["epochs"]):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "w.txt"), "w") as f:
                f.write(str(epoch + 1))
            train.report(
                {"loss": 2.0 / (epoch + 1), "epoch": epoch},
                checkpoint=train.Checkpoint.from_directory(d),
                validation=True,
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--storage", default=tempfile.mkdtemp())
    args = parser.parse_args(argv)
    run = train.RunConfig(storage_path=args.storage)
    first = TorchTrainer(
        free_floating, train_loop_config={"epochs": args.epochs}, scaling_config=train.ScalingConfig(num_workers=2),
        run_config=run,
    ).fit()  # fmt: skip
    print("first fit:", first.metrics)
    second = TorchTrainer(
        checkpointed,
        train_loop_config={"epochs": args.epochs},
        validation_config=train.ValidationConfig(validate),
        run_config=run,
    ).fit()
    print("second fit:", second.metrics)


if __name__ == "__main__":
    main()
