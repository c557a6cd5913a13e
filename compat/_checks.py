"""Input checks for ``report()``: each failure names the fix."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

from compat import _messages

ALLOW_NON_FINITE_ENV_VAR = "COMPAT_ALLOW_NON_FINITE"
_MAX_DEPTH = 16


class ReportError(ValueError):
    """A ``report()`` argument cannot be stored; the message says how to fix it."""


def allow_non_finite() -> bool:
    return os.environ.get(ALLOW_NON_FINITE_ENV_VAR, "").lower() in ("1", "true")


def check_metrics(metrics: Any, *, non_finite_ok: bool) -> dict[str, Any]:
    """Return a shallow copy of ``metrics`` after checking it can be stored and logged."""
    if not isinstance(metrics, Mapping):
        raise ReportError(_messages.bad_metrics_type(metrics))
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise ReportError(_messages.bad_metric_key(key))
        _check_value(key, value, non_finite_ok, 0)
    return dict(metrics)


def _check_value(key: str, value: Any, non_finite_ok: bool, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ReportError(_messages.bad_metric_value(key, value, "nested too deeply"))
    if value is None or isinstance(value, (str, bool)):
        return
    if isinstance(value, numbers.Number):
        if isinstance(value, numbers.Real) and not non_finite_ok and not math.isfinite(value):
            raise ReportError(_messages.non_finite_metric(key, float(value)))
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ReportError(_messages.bad_metric_key(k))
            _check_value(f"{key}/{k}", v, non_finite_ok, depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_value(key, item, non_finite_ok, depth + 1)
        return
    module = type(value).__module__
    if module == "numpy":
        if getattr(value, "dtype", None) is not None and value.dtype.kind in "biufc":
            if not non_finite_ok and value.dtype.kind in "fc":
                import numpy as np

                if not np.isfinite(value).all():
                    raise ReportError(_messages.non_finite_metric(key, float("nan")))
            return
        raise ReportError(_messages.bad_metric_value(key, value, "non-numeric numpy array"))
    if module.startswith("torch"):
        raise ReportError(_messages.bad_metric_value(key, value, "torch objects are not metrics"))
    raise ReportError(_messages.bad_metric_value(key, value, "not a number, string, list or dict"))
