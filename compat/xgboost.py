"""``compat.xgboost``: the XGBoost trainer in V1's form and V2's, under both engines.

``XGBoostTrainer(params=..., label_column=..., num_boost_round=..., datasets=...)`` (V1's
form, which Ray's V2 trainer rejects) and ``XGBoostTrainer(train_fn, ...)`` (V2's form)
both run under ``RAY_TRAIN_V2_ENABLED=0`` and ``=1``, reporting the same metrics names
(``train-rmse``, ``valid-logloss``, ...) and writing checkpoints that
``XGBoostTrainer.get_model`` and Ray's ``RayTrainReportCallback.get_model`` load.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.train.xgboost import RayTrainReportCallback, XGBoostCheckpoint

from compat._trainer import ray_trainer_bases
from compat._trees import TreeTrainer
from compat_core.integration.frameworks import XGBOOST
from compat_core.releases import adapters, facts, standins

if facts.V2_XGBOOST_CONFIG:  # V2's subclasses V1's: ray.train.xgboost.XGBoostConfig in both settings
    from ray.train.v2.xgboost.config import XGBoostConfig
else:
    from ray.train.xgboost.config import XGBoostConfig  # type: ignore[assignment]

__all__ = ["RayTrainReportCallback", "XGBoostCheckpoint", "XGBoostConfig", "XGBoostTrainer"]

# Names this (older) Ray's ray.train.xgboost still exports and newer releases removed (compat/releases.py).
__all__ = standins.export_retired(globals(), "ray.train.xgboost", __all__)


class XGBoostTrainer(TreeTrainer, *ray_trainer_bases(XGBOOST)):  # type: ignore[misc]
    """Data-parallel XGBoost. Takes a training function (V2's form, with
    ``train_loop_config``) or, without one, V1's ``params=``, ``label_column=``,
    ``num_boost_round=`` (default 10) and ``xgboost.train`` keyword arguments.
    ``xgboost_config=`` takes a ``compat.xgboost.XGBoostConfig`` (or Ray's V1 or V2 one)."""

    _framework = XGBOOST

    @staticmethod
    def _legacy_parts() -> tuple[Callable[..., Any], type[Any], str]:
        return adapters.tree_train_fn("xgboost"), RayTrainReportCallback, "xgboost_train_kwargs"
