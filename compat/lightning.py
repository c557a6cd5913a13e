"""``compat.lightning``: Ray's Lightning helpers, for both settings.

The same objects as ``ray.train.lightning``. Their reports (``RayTrainReportCallback``)
go through the engine's own report path, which compat observes in both modes, so they
reach ``after_report``, ``worker_metrics_dataframe`` and the migration report like
``compat.report`` does.
"""

from ray.train.lightning import (
    RayDDPStrategy,
    RayDeepSpeedStrategy,
    RayFSDPStrategy,
    RayLightningEnvironment,
    RayTrainReportCallback,
    prepare_trainer,
)

__all__ = [
    "RayDDPStrategy",
    "RayDeepSpeedStrategy",
    "RayFSDPStrategy",
    "RayLightningEnvironment",
    "RayTrainReportCallback",
    "prepare_trainer",
]
