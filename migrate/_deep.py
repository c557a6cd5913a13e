"""Run a function where deep recursion is safe: long generated expressions (thousands of
chained ``+``) nest the parse trees that deep, and both ``ast`` and libcst recurse once per
level. Raising the recursion limit alone would let the C stack overflow (a crash, not an
error), so the call runs on a thread with a large stack and a matching limit. Only files
that hit Python's default limit take this path."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

STACK_BYTES = 1 << 30  # virtual address space; only the pages actually used are touched
RECURSION_LIMIT = 200_000


def run(fn: Callable[..., T], *args: Any) -> T:
    outcome: dict[str, Any] = {}

    def target() -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(RECURSION_LIMIT)
        try:
            outcome["value"] = fn(*args)
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc
        finally:
            sys.setrecursionlimit(limit)

    previous = threading.stack_size(STACK_BYTES)
    try:
        thread = threading.Thread(target=target, name="migrate-deep")
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
