"""``compat.huggingface.transformers``: Ray's Transformers helpers, for both settings.

The same objects as ``ray.train.huggingface.transformers`` (importing it needs
``transformers``). ``RayTrainReportCallback`` reports through the engine's own report path,
which compat observes in both modes.
"""

from ray.train.huggingface.transformers import RayTrainReportCallback, prepare_trainer

__all__ = ["RayTrainReportCallback", "prepare_trainer"]
