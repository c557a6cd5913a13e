"""Seed 001: a PyTorch Lightning callback that calls ``train.report`` every epoch.

The seed's program, as written, with ``train`` being either Ray's module
(``from ray import train``, the seed's import) or compat (``import compat as train``):
compat sees the reports either way, because it observes Ray's own report path. The seed
imports ``pytorch_lightning``; this uses its current name, ``lightning.pytorch``, which
Ray's ``RayDDPStrategy`` is built on. ``--ray-callback`` uses Ray's own
``RayTrainReportCallback`` (a checkpoint every epoch) instead of the seed's.

Run: python -m examples.lightning_report_callback [--compat] [--ray-callback]
"""

from __future__ import annotations

import sys
from typing import Any

import compat
from compat.torch import TorchTrainer


def _train_module(reporter: str) -> Any:
    if reporter == "compat":
        return compat
    from ray import train  # the seed's import

    return train


def train_func_per_worker(config: dict[str, Any]) -> None:
    import lightning.pytorch as pl
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    if config["reporter"] == "compat":  # the whole script on compat, Lightning helpers included
        from compat.lightning import RayDDPStrategy, RayLightningEnvironment, RayTrainReportCallback, prepare_trainer
    else:
        from ray.train.lightning import RayDDPStrategy, RayLightningEnvironment, RayTrainReportCallback, prepare_trainer

    train = _train_module(config["reporter"])

    class MyRayTrainReportCallback(pl.Callback):  # the seed's callback, unchanged
        def on_train_epoch_end(self, trainer, pl_module):
            metrics = trainer.callback_metrics
            metrics = {k: v.item() for k, v in metrics.items()}

            train.report(metrics=metrics)

    class Regression(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.layer(x), y)
            self.log("train_loss", loss, sync_dist=True, on_epoch=True, on_step=False)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    callback = RayTrainReportCallback() if config["ray_callback"] else MyRayTrainReportCallback()
    trainer = pl.Trainer(
        max_epochs=config["epochs"],
        accelerator="cpu",
        devices="auto",
        strategy=RayDDPStrategy(),
        plugins=[RayLightningEnvironment()],
        callbacks=[callback],
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        logger=False,
    )
    trainer = prepare_trainer(trainer)
    trainer.fit(Regression(), loader)


def main(
    storage_path: str | None = None, *, reporter: str = "ray", ray_callback: bool = False, epochs: int = 2
) -> compat.Result:
    result = TorchTrainer(
        train_func_per_worker,
        train_loop_config={"reporter": reporter, "ray_callback": ray_callback, "epochs": epochs},
        scaling_config=compat.ScalingConfig(num_workers=2),
        run_config=compat.RunConfig(storage_path=storage_path),
    ).fit()
    print("metrics:", result.metrics)
    print("every worker's reports:\n", result.worker_metrics_dataframe)
    print(result.migration_report())
    return result


if __name__ == "__main__":
    main(reporter="compat" if "--compat" in sys.argv else "ray", ray_callback="--ray-callback" in sys.argv)
