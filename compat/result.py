"""``compat.Result``: one result type for both engines (defined in :mod:`compat_core.semantics.result`)."""

from compat_core.files.pickled import StoredError, StoredValue, UnreadableValue
from compat_core.semantics.result import ReportedCheckpoint, Result

__all__ = ["ReportedCheckpoint", "Result", "StoredError", "StoredValue", "UnreadableValue"]
