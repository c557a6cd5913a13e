"""For tests that start a multi-node ``ray.cluster_utils.Cluster`` in a subprocess."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator


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
