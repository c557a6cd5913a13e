"""A plain-JSON record of each ``fit()``, for ``python -m compat compare``.

When ``COMPAT_CAPTURE_DIR`` names a directory, every compat ``fit()`` of the process writes
one ``fit-<pid>-<n>.json`` there as it returns or raises, built from the records compat
already keeps (the run ledger, the result). The script under comparison is not edited.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

from compat_core import messages, settings
from compat_core.files.storage import checkpoint_dir_name
from compat_core.semantics.result import Result
from compat_core.semantics.v1_logs import AUTO_KEYS

CAPTURE_ENV_VAR = settings.CAPTURE_DIR.name
_count = 0

# Keys V1 adds to every report; they are the engine's, not the user's.


def plain(value: Any) -> Any:
    """JSON-safe: NaN and infinities become the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item"):
        return plain(value.item())
    return str(value)


def _user_cells(row: dict[Any, Any]) -> dict[str, Any]:
    return {str(k): plain(v) for k, v in row.items() if k not in AUTO_KEYS and not str(k).startswith("config/")}


def user_metrics(metrics: dict[str, Any] | None) -> dict[str, Any] | None:
    if metrics is None:
        return None
    return {
        k: plain(v)
        for k, v in metrics.items()
        if k not in AUTO_KEYS and not k.startswith("config/") and not (isinstance(v, float) and math.isnan(v))
    }


def _run_files(result: Result) -> list[str]:
    """The run directory's entries (checkpoint directories counted, not listed)."""
    if not result.path:
        return []
    try:
        import pyarrow.fs as pafs

        raw = result.raw
        filesystem: Any = getattr(raw, "filesystem", None) if raw is not None else None
        path = result.path
        if filesystem is None:
            filesystem, path = pafs.FileSystem.from_uri(path if "://" in path else os.path.abspath(path))
        infos = filesystem.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
    except Exception:
        return []
    visible = [i for i in infos if not os.path.basename(i.path).startswith(".")]
    checkpoints = [
        i for i in visible if i.type == pafs.FileType.Directory and os.path.basename(i.path).startswith("checkpoint_")
    ]
    checkpoint_paths = {i.path for i in checkpoints}
    others = sorted(os.path.basename(i.path) for i in visible if i.path not in checkpoint_paths)
    return others + ([f"checkpoint_* ({len(checkpoints)})"] if checkpoints else [])


@dataclass(frozen=True)
class FitCall:
    """Which fit() of the script a record is: the trainer, the run's name, the user's line;
    for a Ray Tune trial its sweep (``{"experiment": ..., "config": the trial's sample}``), and
    when the fit started (seconds since the epoch: trials' overlaps are a sweep's concurrency)."""

    trainer: str = ""
    run_name: str | None = None
    call_site: str = ""
    trial: dict[str, Any] | None = None
    started_at: float | None = None


def fit_record(
    result: Result, seconds: float, error: BaseException | None, call: FitCall = FitCall()
) -> dict[str, Any]:
    frame = result.metrics_dataframe
    # A frame's cells as they are: a missing value (NaN) stays "NaN", apart from None.
    rows = [] if frame is None else [_user_cells(r) for r in frame.to_dict("records")]
    by_dir = {checkpoint_dir_name(c.checkpoint): c for c in result.reported_checkpoints}
    rounds = []
    for round_ in result.report_rounds:
        kept = by_dir.get(round_.checkpoint_dir_name or "") if round_.has_checkpoint else None
        rounds.append(
            {
                "attempt": round_.attempt,
                "index": round_.index,
                "workers": [user_metrics(m) for m in round_.per_worker_metrics],
                "has_checkpoint": round_.has_checkpoint,
                "checkpoint_dir_name": round_.checkpoint_dir_name,
                "checkpoint_metrics": user_metrics(kept.metrics) if kept else None,
                "status": kept.status.value if kept else None,
            }
        )
    workers = result.worker_metrics_dataframe
    worker_rows = (
        [] if workers is None else [user_metrics(r) for r in workers.drop(columns="timestamp").to_dict("records")]
    )
    return {
        "backend": result.backend,
        "trainer": call.trainer,
        "run_name": call.run_name,
        "call_site": call.call_site,
        "seconds": round(seconds, 2),
        "trial": plain(call.trial) if call.trial is not None else None,
        "started_at": call.started_at,
        "error": f"{type(error).__name__}: {error}" if error is not None else None,
        "metrics": user_metrics(result.metrics),
        "metrics_dataframe": {
            "columns": list(frame.columns),
            "dtypes": {str(c): str(t) for c, t in frame.dtypes.items()},
            "rows": rows,
        }
        if frame is not None
        else None,
        "checkpoints": [
            {
                "dir_name": checkpoint_dir_name(c.checkpoint),
                "metrics": user_metrics(c.metrics),
                "status": c.status.value,
            }
            for c in result.reported_checkpoints
        ],  # fmt: skip
        "rounds": rounds,
        "worker_reports": worker_rows,
        "v1_usage": _usages(result),
        "run_files": _run_files(result),
    }


def reserve() -> str | None:
    """The path of this fit's record (None when ``COMPAT_CAPTURE_DIR`` is not set)."""
    global _count
    directory = settings.CAPTURE_DIR.get()
    if not directory:
        return None
    _count += 1
    return os.path.join(directory, f"fit-{os.getpid()}-{_count:03d}.json")


def unfinished(path: str | None, backend: str, call: FitCall) -> None:
    """At ``path``, a record of a fit that has not returned yet (a Ray Tune trial, which Tune may
    end at any report, and then its process): replaced by the fit's record when it returns.
    compare names such a trial as not compared (its rounds went to Tune)."""
    if path is None:
        return
    record: dict[str, Any] = {
        "backend": backend, "trainer": call.trainer, "run_name": call.run_name, "call_site": call.call_site,
        "trial": plain(call.trial) if call.trial is not None else None, "started_at": call.started_at,
        "seconds": None, "unfinished": True,
    }  # fmt: skip
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write(path, record)
    except Exception as exc:
        _cannot_record(exc)


def capture(
    result: Result | None,
    seconds: float,
    error: BaseException | None,
    call: FitCall = FitCall(),
    path: str | None = None,
) -> str | None:
    """Write this fit's record when ``COMPAT_CAPTURE_DIR`` is set (at ``path`` when one was
    reserved), and return its path (None when not written); never fails the fit."""
    if result is None:
        return None
    path = path or reserve()
    if path is None:
        return None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write(path, fit_record(result, seconds, error, call))
    except Exception as exc:  # a comparison aid must not break the user's run
        _cannot_record(exc)
        return None
    return path


def usage_read(path: str | None, result: Result) -> None:
    """The program read a part of ``result`` the other semantics give otherwise after its fit
    was recorded at ``path``: the record's ``v1_usage`` becomes the result's (compare counts the
    reads a program makes, not only what ``fit()`` did)."""
    if path is None:
        return
    try:
        with open(path) as f:
            record = json.load(f)
        record["v1_usage"] = _usages(result)
        _write(path, record)
    except Exception as exc:
        _cannot_record(exc)


def _usages(result: Result) -> list[dict[str, Any]]:
    return [{"kind": u.kind, "count": u.count, "first_site": u.first_site} for u in result.v1_usage]


def _write(path: str, record: dict[str, Any]) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(record, f, default=str)
    os.replace(path + ".tmp", path)


def _cannot_record(exc: Exception) -> None:
    from compat_core.migration import where

    where.warn(messages.cannot_record_fit(exc), UserWarning)
