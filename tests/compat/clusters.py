"""For tests that start a multi-node ``ray.cluster_utils.Cluster`` in a subprocess (a process
connects to one Ray cluster, and the suite's is single-node): :func:`run_script` on the test's
side, :func:`watchdog` inside the script."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@contextlib.contextmanager
def private_ray_tmpdir(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """``env`` with ``RAY_TMPDIR`` a new directory of its own (short: Ray's sockets live under
    it), removed afterwards. A ``Cluster`` writes its address to ``<RAY_TMPDIR>/ray/
    ray_current_cluster``; in the shared ``/tmp/ray``, a plain ``ray.init()`` anywhere on the
    machine (another test's program, run beside) would join that cluster instead of starting
    its own."""
    directory = tempfile.mkdtemp(prefix="rc", dir="/tmp")
    try:
        yield {**env, "RAY_TMPDIR": directory}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def run_script(script: str, marker: str, args: list[str], env: dict[str, str], timeout_s: float) -> Any:
    """Run ``script`` (``python -c``) with ``args``, this checkout on its path, ``env`` over the
    test's environment (without ``RAY_ADDRESS``) and a private ``RAY_TMPDIR``; the JSON it
    printed on its last line starting with ``marker``."""
    return script_lines(script, marker, args, env, timeout_s)[-1]


def script_lines(
    script: str, marker: str, args: list[str], env: dict[str, str], timeout_s: float, count: int | None = None
) -> list[Any]:
    """As :func:`run_script`, every JSON line starting with ``marker`` (``count`` of them, when
    given: fewer means the script stopped early, and its output says why)."""
    full = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    full.update(env)
    full["PYTHONPATH"] = os.pathsep.join([ROOT, full.get("PYTHONPATH", "")])
    with private_ray_tmpdir(full) as full, tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run(
            [sys.executable, "-c", script, *args], env=full, capture_output=True, text=True, timeout=timeout_s, cwd=cwd
        )
    lines = [line for line in out.stdout.splitlines() if line.startswith(marker + " ")]
    assert lines and count in (None, len(lines)), out.stdout[-3000:] + out.stderr[-6000:]
    return [json.loads(line.removeprefix(marker + " ")) for line in lines]


def watchdog(cluster: Any, seconds: float) -> None:
    """In the script: never leave a cluster behind, whatever hangs (after ``seconds``, the
    cluster is shut down and the process exits with 3)."""

    def expire() -> None:
        time.sleep(seconds)
        print("DEADLINE: a run did not end", flush=True)
        cluster.shutdown()
        os._exit(3)

    threading.Thread(target=expire, daemon=True).start()
