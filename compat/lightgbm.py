"""``compat.lightgbm``: the LightGBM trainer in V1's form and V2's, under both engines.

As :mod:`compat.xgboost`: ``LightGBMTrainer(params=..., label_column=..., datasets=...)``
and ``LightGBMTrainer(train_fn, ...)`` both run under either setting, with the same metrics
names and checkpoints that ``LightGBMTrainer.get_model`` loads. Inside a training function,
``compat.lightgbm.get_network_params()`` gives the worker group's network parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.train.lightgbm import LightGBMCheckpoint, LightGBMConfig, RayTrainReportCallback, get_network_params

from compat._trainer import ray_trainer_bases
from compat._trees import TreeTrainer
from compat_core.integration.frameworks import LIGHTGBM
from compat_core.releases import adapters, facts, standins

if facts.LIGHTGBM_NORMALIZE:
    from ray.train.lightgbm import normalize_pandas_for_lightgbm

__all__ = [
    "LightGBMCheckpoint",
    "LightGBMConfig",
    "LightGBMTrainer",
    "RayTrainReportCallback",
    "get_network_params",
]
if facts.LIGHTGBM_NORMALIZE:
    __all__ += ["normalize_pandas_for_lightgbm"]

# Names this (older) Ray's ray.train.lightgbm still exports and newer releases removed (compat/releases.py).
__all__ = standins.export_retired(globals(), "ray.train.lightgbm", __all__)


class LightGBMTrainer(TreeTrainer, *ray_trainer_bases(LIGHTGBM)):  # type: ignore[misc]
    """Data-parallel LightGBM. Takes a training function (V2's form, with
    ``train_loop_config``) or, without one, V1's ``params=``, ``label_column=``,
    ``num_boost_round=`` (default 10) and ``lightgbm.train`` keyword arguments.
    ``lightgbm_config=`` takes a ``compat.lightgbm.LightGBMConfig``."""

    _framework = LIGHTGBM

    @staticmethod
    def _legacy_parts() -> tuple[Callable[..., Any], type[Any], str]:
        return adapters.tree_train_fn("lightgbm"), RayTrainReportCallback, "lightgbm_train_kwargs"
