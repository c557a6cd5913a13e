"""``compat.torch``: the torch trainer and utilities, for both backends."""

from __future__ import annotations

from typing import Any

from compat import _worker
from compat._trainer import TorchTrainer

__all__ = ["TorchTrainer", "get_device", "prepare_data_loader", "prepare_model"]


def _utils() -> Any:
    session = _worker.current()
    if session is not None:
        return session.side.torch_utils()
    from ray.train.torch import train_loop_utils  # outside a worker: Ray's own fallbacks

    return train_loop_utils


def prepare_model(model: Any, *args: Any, **kwargs: Any) -> Any:
    """Move ``model`` to the worker's device and wrap it in DistributedDataParallel."""
    return _utils().prepare_model(model, *args, **kwargs)


def prepare_data_loader(data_loader: Any, *args: Any, **kwargs: Any) -> Any:
    """Add a DistributedSampler and move batches to the worker's device."""
    return _utils().prepare_data_loader(data_loader, *args, **kwargs)


def get_device() -> Any:
    """The torch device this worker trains on."""
    return _utils().get_device()
