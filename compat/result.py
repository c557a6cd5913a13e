"""``compat.Result``: one result type for both engines (defined in :mod:`compat_core.result`)."""

from compat_core.result import ReportedCheckpoint, Result

__all__ = ["ReportedCheckpoint", "Result"]
