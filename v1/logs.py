"""V1's run logs, ``progress.csv`` and ``result.json``, as plain file operations.

Ray V1 (Tune's CSV logger) freezes the CSV columns at the first report, so a key first
reported later is missing from every row. :func:`repair_progress_csv` rewrites the CSV
from ``result.json`` with every key; :func:`write_logs` writes both files for compat's
``keep_v1_logs`` opt-in under v2.
"""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

PROGRESS_CSV = "progress.csv"
RESULT_JSON = "result.json"


def flatten(row: Mapping[str, Any], prefix: str = "", delimiter: str = "/") -> dict[str, Any]:
    """Tune's ``flatten_dict``: nested dicts become ``a/b`` columns."""
    flat: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{delimiter}{key}" if prefix else key
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, name, delimiter))
        else:
            flat[name] = value
    return flat


def columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every key of every row, in order of first appearance."""
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def _csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    flat = [flatten(r) for r in rows]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(flat), restval="")
    writer.writeheader()
    writer.writerows(flat)
    return buffer.getvalue()


def read_result_json(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    path = Path(directory) / RESULT_JSON
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def repair_progress_csv(directory: str | os.PathLike[str]) -> bool:
    """Rewrite ``progress.csv`` from ``result.json`` with every key. True if it changed."""
    rows = read_result_json(directory)
    if not rows:
        return False
    path = Path(directory) / PROGRESS_CSV
    text = _csv_text(rows)
    if path.exists() and path.read_bytes() == text.encode():
        return False
    _atomic_write(path, text)
    return True


def write_logs(directory: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]]) -> None:
    """Write ``result.json`` (one JSON line per row) and ``progress.csv``."""
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(dict(r), default=_json_default) + "\n" for r in rows)
    _atomic_write(target / RESULT_JSON, lines)
    _atomic_write(target / PROGRESS_CSV, _csv_text(rows))


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def auto_filled(
    metrics_rows: Sequence[Mapping[str, Any]],
    timestamps: Sequence[float],
    checkpoint_dir_names: Sequence[str | None],
    *,
    start_time: float,
    config: Mapping[str, Any],
    trial_id: str,
) -> list[dict[str, Any]]:
    """Rows with V1's auto-filled keys, as V1's session adds them to each report."""
    rows = []
    previous = start_time
    hostname = socket.gethostname()
    node_ip = _node_ip()
    for i, (metrics, ts, dir_name) in enumerate(zip(metrics_rows, timestamps, checkpoint_dir_names, strict=True)):
        row = dict(metrics)
        row.update(
            timestamp=int(ts),
            checkpoint_dir_name=dir_name,
            done=False,
            training_iteration=i + 1,
            trial_id=trial_id,
            date=datetime.fromtimestamp(ts).strftime("%Y-%m-%d_%H-%M-%S"),
            time_this_iter_s=ts - previous,
            time_total_s=ts - start_time,
            pid=os.getpid(),
            hostname=hostname,
            node_ip=node_ip,
            config=dict(config),
            time_since_restore=ts - start_time,
            iterations_since_restore=i + 1,
        )
        if dir_name is not None:
            row["should_checkpoint"] = True
        rows.append(row)
        previous = ts
    return rows


def _node_ip() -> str:
    try:
        import ray

        return str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]  # untyped in Ray
    except Exception:
        return "127.0.0.1"
