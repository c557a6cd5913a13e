"""``compat.torch``: the torch trainer and utilities, for both backends.

Everything in ``ray.train.torch`` under either setting. Ray's V1 mixed-precision helpers
(``accelerate``, ``prepare_optimizer``, ``backward``) raise under Ray's V2; compat keeps
them working without AMP under v2 (the optimizer unchanged, ``tensor.backward()``),
counted as the V1-only kind ``torch-amp``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ray.train.torch import TorchCheckpoint
from ray.train.torch.config import TorchConfig

from compat._trainer import DataParallelTrainer, TrainerArguments, ray_trainer_bases
from compat_core import messages
from compat_core.errors import CompatError
from compat_core.integration.frameworks import TORCH
from compat_core.migration import usage
from compat_core.releases import standins
from compat_core.run import worker

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "TorchCheckpoint",
    "TorchConfig",
    "TorchTrainer",
    "accelerate",
    "backward",
    "enable_reproducibility",
    "get_device",
    "get_devices",
    "prepare_data_loader",
    "prepare_model",
    "prepare_optimizer",
]


class TorchTrainer(DataParallelTrainer, *ray_trainer_bases(TORCH)):  # type: ignore[misc]
    """Runs ``train_loop_per_worker`` on ``scaling_config.num_workers`` torch workers
    (``torch_config``: a ``compat.torch.TorchConfig``). Everything else as
    :class:`DataParallelTrainer`; a subclass of Ray's ``TorchTrainer`` (V2's and V1's)."""

    _framework = TORCH

    def __init__(
        self,
        train_loop_per_worker: Callable[..., Any],
        *,
        torch_config: Any = None,
        **arguments: Unpack[TrainerArguments],
    ) -> None:
        super().__init__(train_loop_per_worker, backend_config=torch_config, **arguments)

    @property
    def torch_config(self) -> Any:
        return self.backend_config


# Names this (older) Ray's ray.train.torch still exports and newer releases removed (compat/releases.py).
__all__ = standins.export_retired(globals(), "ray.train.torch", __all__)


def _utils() -> Any:
    session = worker.current()
    if session is not None:
        return session.side.torch_utils()
    from ray.train.torch import train_loop_utils  # outside a worker: Ray's own fallbacks

    return train_loop_utils


def _amp_helpers() -> bool:
    """V1's mixed-precision helpers exist here (outside a worker: Ray's V1 fallbacks)."""
    session = worker.current()
    return session is None or session.side.amp_helpers


def prepare_model(model: Any, *args: Any, **kwargs: Any) -> Any:
    """Move ``model`` to the worker's device and wrap it in DistributedDataParallel."""
    return _utils().prepare_model(model, *args, **kwargs)


def prepare_data_loader(data_loader: Any, *args: Any, **kwargs: Any) -> Any:
    """Add a DistributedSampler and move batches to the worker's device."""
    return _utils().prepare_data_loader(data_loader, *args, **kwargs)


def get_device() -> Any:
    """The torch device this worker trains on."""
    return _utils().get_device()


def get_devices() -> list[Any]:
    """Every torch device assigned to this worker."""
    return list(_utils().get_devices())


def enable_reproducibility(seed: int = 0) -> None:
    """Seed torch, Python and NumPy and ask torch for deterministic algorithms."""
    _utils().enable_reproducibility(seed)


def accelerate(amp: bool = False) -> None:
    """V1's training optimizations (mixed precision with ``amp=True``). V1-only."""
    usage.relied_on("torch-amp", "compat.torch.accelerate()")
    if _amp_helpers():
        _utils().accelerate(amp)
    elif amp:
        raise CompatError(messages.AMP_UNDER_V2)


def prepare_optimizer(optimizer: Any) -> Any:
    """V1: wrap ``optimizer`` for mixed precision after ``accelerate(amp=True)``. Under v2
    the optimizer is returned unchanged (V2 has no AMP helper). V1-only."""
    usage.relied_on("torch-amp", "compat.torch.prepare_optimizer()")
    return _utils().prepare_optimizer(optimizer) if _amp_helpers() else optimizer


def backward(tensor: Any) -> None:
    """V1: ``tensor.backward()`` through the AMP scaler when enabled. Under v2, plain
    ``tensor.backward()``. V1-only."""
    usage.relied_on("torch-amp", "compat.torch.backward()")
    if _amp_helpers():
        _utils().backward(tensor)
    else:
        tensor.backward()
