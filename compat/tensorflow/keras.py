"""``compat.tensorflow.keras``: Ray's Keras callbacks (``ray.train.tensorflow.keras``), which report
through ``ray.train.report``: compat's workers keep those reports by the selected semantics."""

from __future__ import annotations

from ray.train.tensorflow.keras import ReportCheckpointCallback

__all__ = ["ReportCheckpointCallback"]
