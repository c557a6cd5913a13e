"""Runs every example under V1 and under V2 semantics in one process and shows the differences.

python -m examples.demo            # all examples
python -m examples.demo --quick    # fewer epochs
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import compat as train
from compat import _switch


def _summary(result: train.Result) -> dict[str, Any]:
    frame = result.metrics_dataframe
    files = sorted(f for f in os.listdir(result.path) if not f.startswith(".")) if os.path.isdir(result.path) else []
    return {
        "result.metrics keys": sorted(k for k in (result.metrics or {}) if not k.startswith("config"))[:8]
        if result.metrics is not None
        else None,
        "metrics_dataframe rows": None if frame is None else len(frame),
        "checkpoints (status)": [c.status.value for c in result.reported_checkpoints],
        "every worker's reports": 0
        if result.worker_metrics_dataframe is None
        else len(result.worker_metrics_dataframe),
        "run directory": [f for f in files if not f.startswith("checkpoint_")][:5],
        "V1-only behaviours": [f"{u.kind} x{u.count}" for u in result.v1_usage],
    }


def _run(name: str, fn: Callable[[str], Any]) -> dict[str, dict[str, Any]]:
    rows = {}
    for backend in ("v1", "v2"):
        os.environ[_switch.ENV_VAR] = _switch.env_value(backend)  # flip between runs, same process
        start = time.monotonic()
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # the examples' own prints
            out = fn(tempfile.mkdtemp(prefix=f"{name}_{backend}_"))
        result = out[0] if isinstance(out, tuple) else out
        summary = _summary(result)
        if isinstance(out, tuple):
            summary["after_report calls"] = len(out[1])
        summary["fit seconds"] = round(time.monotonic() - start, 1)
        rows[backend] = summary
    return rows


def _print(name: str, rows: dict[str, dict[str, Any]]) -> None:
    print(f"\n=== {name} ===")
    print(f"{'':<26}{'V1 (RAY_TRAIN_V2_ENABLED=0)':<44}V2 (RAY_TRAIN_V2_ENABLED=1)")
    for key in rows["v1"]:
        v1, v2 = rows["v1"][key], rows["v2"][key]
        mark = " " if v1 == v2 or key == "fit seconds" else "*"
        print(f"{mark} {key:<24}{str(v1)[:42]:<44}{str(v2)[:60]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer epochs")
    args = parser.parse_args(argv)
    # Workers import the examples by module name.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    from examples import (
        after_report_callback,
        async_validation,
        config_and_results,
        lightning_report_callback,
        torchmetrics_aggregation,
    )

    epochs = 2 if args.quick else 5
    examples: list[tuple[str, Callable[[str], Any]]] = [
        ("torchmetrics aggregation (seed 000)", lambda p: torchmetrics_aggregation.main(p, num_epochs=epochs)),
        ("after_report callback (seed 000)", after_report_callback.main),
        ("async validation, both forms (seed 003)", lambda p: async_validation.main(p, epochs=min(epochs, 3))),
        ("config and results, V1 style (seed 004)", config_and_results.main),
        (
            "Lightning callback, from ray import train (seed 001)",
            lambda p: lightning_report_callback.main(p, reporter="ray", epochs=min(epochs, 3)),
        ),
        (
            "Lightning callback, import compat as train (seed 001)",
            lambda p: lightning_report_callback.main(p, reporter="compat", epochs=min(epochs, 3)),
        ),
    ]
    try:
        for name, fn in examples:
            _print(name, _run(name.split(" (")[0].split(",")[0].replace(" ", "_"), fn))
    finally:
        ray.shutdown()
    print("\n* = differs between V1 and V2. See docs/compatibility.md for why.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
