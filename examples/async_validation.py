"""Seed 003: validate checkpoints asynchronously, in both documented forms, on a real model.

A small linear regression is trained on synthetic data. Epoch checkpoints are validated
in a separate Ray task: even epochs with the older form (``validate_fn=``,
``validate_config=``: raw Ray 2.60 rejects it, compat runs it), odd epochs with Ray 2.60's
form (``ValidationConfig`` on the trainer, ``validation=`` on report). Validated metrics
overwrite the same keys (here ``loss``) and add new ones (``score``).
Run: python -m examples.async_validation
"""

from __future__ import annotations

import os
import tempfile

import ray.data
import torch
import torch.nn as nn

import compat as train
from compat.torch import TorchTrainer, prepare_model

TRUE_WEIGHTS = torch.tensor([[1.5], [-2.0], [0.5]])


def make_rows(n: int, seed: int) -> list[dict[str, list[float] | float]]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=generator)
    y = x @ TRUE_WEIGHTS + 0.1 * torch.randn(n, 1, generator=generator)
    return [{"x": row.tolist(), "y": float(target)} for row, target in zip(x, y, strict=True)]


def load_model(checkpoint: train.Checkpoint) -> nn.Module:
    model = nn.Linear(3, 1)
    with checkpoint.as_directory() as checkpoint_dir:
        model.load_state_dict(torch.load(os.path.join(checkpoint_dir, "model.pt")))
    return model.eval()


def mse(model: nn.Module, batches) -> float:
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            pred = model(batch["x"].float())
            total += float(((pred.squeeze(1) - batch["y"].float()) ** 2).sum())
            count += len(batch["y"])
    return total / count


def validate_fn(checkpoint: train.Checkpoint, config: dict) -> dict:
    """The older form: ``fn(checkpoint, config)``; the dataset comes in ``config``."""
    loss = mse(load_model(checkpoint), config["dataset"].iter_torch_batches(batch_size=64))
    return {"loss": loss, "score": 1.0 / (1.0 + loss), "epoch_validated": config["epoch"]}


def validate_with_kwargs(checkpoint: train.Checkpoint, rows: list, epoch: int) -> dict:
    """Ray 2.60's form: ``fn(checkpoint, **fn_kwargs)``; fn_kwargs must be JSON-serializable."""
    batch = {"x": torch.tensor([r["x"] for r in rows]), "y": torch.tensor([r["y"] for r in rows])}
    loss = mse(load_model(checkpoint), [batch])
    return {"loss": loss, "score": 1.0 / (1.0 + loss), "epoch_validated": epoch}


def train_func(config: dict) -> None:
    torch.manual_seed(0)  # the same initial weights on every run: runs can be compared
    model = prepare_model(nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    shard = train.get_dataset_shard("train")
    rank = train.get_context().get_world_rank()
    for epoch in range(config["epochs"]):
        epoch_loss, batches = 0.0, 0
        for batch in shard.iter_torch_batches(batch_size=32):
            loss = nn.functional.mse_loss(model(batch["x"].float()).squeeze(1), batch["y"].float())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_loss, batches = epoch_loss + loss.item(), batches + 1
        metrics = {"loss": epoch_loss / max(batches, 1), "epoch": epoch}
        if rank != 0:
            train.report(metrics)
            continue
        directory = tempfile.mkdtemp()
        state = model.module.state_dict() if hasattr(model, "module") else model.state_dict()
        torch.save(state, os.path.join(directory, "model.pt"))
        checkpoint = train.Checkpoint.from_directory(directory)
        if epoch % 2 == 0:
            train.report(
                metrics,
                checkpoint=checkpoint,
                validate_fn=validate_fn,
                validate_config={"dataset": config["validation_dataset"], "epoch": epoch},
            )
        else:
            train.report(
                metrics,
                checkpoint=checkpoint,
                validation=train.ValidationTaskConfig(fn_kwargs={"epoch": epoch}),
            )


def main(storage_path: str | None = None, epochs: int = 3) -> train.Result:
    validation_rows = make_rows(128, seed=1)
    # Each worker gets the same rows in the same order on every run (Ray Data otherwise hands
    # blocks to whichever worker asks first), so two runs of this script can be compared.
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    trainer = TorchTrainer(
        train_func,
        datasets={"train": ray.data.from_items(make_rows(512, seed=0))},
        train_loop_config={"epochs": epochs, "validation_dataset": ray.data.from_items(validation_rows)},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage_path),
        validation_config=train.ValidationConfig(
            fn=validate_with_kwargs,
            task_config=train.ValidationTaskConfig(fn_kwargs={"rows": validation_rows}),
        ),
    )
    result = trainer.fit()
    for reported in result.reported_checkpoints:
        print(
            reported.status.value, {k: reported.metrics[k] for k in ("epoch", "loss", "score") if k in reported.metrics}
        )
    for round_ in result.report_rounds:  # a failed validation keeps the training metrics; here is why it failed
        if round_.validation is not None and round_.validation.error is not None:
            print(f"validation of epoch {round_.rank0_metrics['epoch']} failed: {round_.validation.error}")
    return result


if __name__ == "__main__":
    main()
