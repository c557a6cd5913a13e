"""Running the user's script, unmodified, once per setting, in a child process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat._capture import CAPTURE_ENV_VAR
from compat_core import switch


@dataclass
class ScriptRun:
    """One run of the script: how it ended, where its output went, and its fits."""

    backend: str
    exit_status: int | None  # None: killed after the timeout
    log: str
    seconds: float
    traceback_tail: list[str] = field(default_factory=list)
    fits: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.exit_status != 0

    def as_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "exit_status": self.exit_status,
            "timed_out": self.exit_status is None,
            "log": self.log,
            "seconds": round(self.seconds, 1),
            "traceback_tail": self.traceback_tail,
            "fits": len(self.fits),
        }


def child_env(backend: str, capture_dir: Path, script_dir: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(switch.selecting(switch.Generation(backend)))
    env[CAPTURE_ENV_VAR] = str(capture_dir)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("RAY_ADDRESS", None)  # each run starts, and shuts down, its own local cluster
    # Ray workers import the script's modules by name, as they would from its directory.
    paths = [os.getcwd(), script_dir, env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in dict.fromkeys(paths) if p)
    return env


def traceback_tail(log: Path, lines: int = 6) -> list[str]:
    """The last lines of the log's last traceback, ending at its exception line (Ray may log
    more after it while shutting down)."""
    text = log.read_text(errors="replace").splitlines() if log.exists() else []
    starts = [i for i, line in enumerate(text) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        return []
    block = [text[starts[-1]]]
    for line in text[starts[-1] + 1 :]:
        if not line.strip():
            continue
        block.append(line)
        if not line[0].isspace():  # frames are indented; the exception line is not
            break
    return block[-lines:]


def run_script(backend: str, command: list[str], workdir: Path, timeout: float | None) -> ScriptRun:
    """Run ``python <command>`` with ``RAY_TRAIN_V2_ENABLED`` for ``backend``; output to a log."""
    capture_dir = workdir / backend / "fits"
    capture_dir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{backend}.log"
    script_dir = os.path.dirname(os.path.abspath(command[0])) if command[0] != "-m" else os.getcwd()
    start = time.monotonic()
    with open(log, "w") as out:
        child = subprocess.Popen(
            [sys.executable, *command],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=child_env(backend, capture_dir, script_dir),
            start_new_session=True,  # a timeout stops the script and everything it started
        )
        try:
            status: int | None = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(child)
            status = None
    fits = [json.loads(p.read_text()) for p in sorted(capture_dir.glob("fit-*.json"), key=_fit_order)]
    # A run that exited 0 has no failure to show (Ray logs tracebacks it recovered from).
    tail = traceback_tail(log) if status != 0 else []
    return ScriptRun(backend, status, str(log), time.monotonic() - start, tail, fits)


def _fit_order(path: Path) -> tuple[float, str]:
    return (path.stat().st_mtime, path.name)


def _stop(child: subprocess.Popen[bytes]) -> None:
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
