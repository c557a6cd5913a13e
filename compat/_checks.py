"""Input checks for ``report()``: each failure names the fix."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from compat_core import messages
from compat_core.errors import ReportError
from compat_core.semantics.rounds import non_finite_keys

__all__ = ["check_metrics", "non_finite_keys"]

_MAX_DEPTH = 16


def check_metrics(metrics: Any) -> dict[str, Any]:
    """Return a shallow copy of ``metrics`` after checking it can be stored and logged.

    NaN and inf are accepted, as Ray accepts them: a diverging trial is recorded, not
    stopped (the driver warns once per key, see :func:`non_finite_keys`).
    """
    if not isinstance(metrics, Mapping):
        raise ReportError(messages.bad_metrics_type(metrics))
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise ReportError(messages.bad_metric_key(key))
        _check_value(key, value, 0)
    return dict(metrics)


def _check_value(key: str, value: Any, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ReportError(messages.bad_metric_value(key, value, "nested too deeply"))
    if value is None or isinstance(value, (str, bool, numbers.Number)):
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ReportError(messages.bad_metric_key(k))
            _check_value(f"{key}/{k}", v, depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_value(key, item, depth + 1)
        return
    module = type(value).__module__
    if module == "numpy":
        if getattr(value, "dtype", None) is not None and value.dtype.kind in "biufc":
            return
        raise ReportError(messages.bad_metric_value(key, value, "non-numeric numpy array"))
    if module.startswith("torch"):
        raise ReportError(messages.bad_metric_value(key, value, "torch objects are not metrics"))
    raise ReportError(messages.bad_metric_value(key, value, "not a number, string, list or dict"))
