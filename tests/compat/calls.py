"""A user callback that writes every call it gets to a file, for tests whose callbacks run in
another process (the run ledger's) than the test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import compat as train


class CallLog(train.UserCallback):
    """``["report", step]`` per ``after_report`` (rank 0's ``step``), ``["exception", {rank:
    error type}]`` per ``after_exception``, one JSON line each."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _write(self, entry: Any) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def after_report(self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Any) -> None:
        self._write(["report", metrics[0]["step"]])

    def after_exception(self, run_context: Any, worker_exceptions: dict[int, BaseException]) -> None:
        self._write(["exception", {str(rank): type(e).__name__ for rank, e in worker_exceptions.items()}])


def calls(path: str | Path) -> list[Any]:
    """What a :class:`CallLog` wrote, in order (nothing: [])."""
    path = Path(path)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
