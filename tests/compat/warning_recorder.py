"""A Ray ``worker_process_setup_hook`` (and the driver's own setup): every process of the job
shows each of Ray's deprecation warnings ("always") and appends it (not compat's own, which
subclass Ray's class) to the file
``$COMPAT_TEST_WARNINGS`` as one JSON line, with the process's pid; each process also writes a
line when it starts recording. tests/compat/test_quiet_runs.py reads them."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

ENV_VAR = "COMPAT_TEST_WARNINGS"


def _append(entry: dict[str, Any]) -> None:
    with open(os.environ[ENV_VAR], "a") as f:
        f.write(json.dumps({"pid": os.getpid(), **entry}) + "\n")


def setup() -> None:
    from ray.util.annotations import RayDeprecationWarning

    from compat_core.migration.usage import CompatDeprecationWarning

    shown = warnings.showwarning

    def record(message: Any, category: type[Warning], filename: str, lineno: int, *args: Any, **kwargs: Any) -> None:
        # Ray's own; not compat's V1OnlyWarnings (RayDeprecationWarnings too), given on purpose.
        if issubclass(category, RayDeprecationWarning) and not issubclass(category, CompatDeprecationWarning):
            _append({"warning": f"{category.__name__}: {message}", "at": f"{filename}:{lineno}"})
        shown(message, category, filename, lineno, *args, **kwargs)

    warnings.simplefilter("always", RayDeprecationWarning)
    warnings.showwarning = record
    _append({"recording": True})
