"""What the CI suite and the full suite differ in besides their selection (README.md, "The CI suite
and the full suite"): how many examples a property test draws."""

from __future__ import annotations

import os

FULL = bool(os.environ.get("COMPAT_FULL_SUITE"))  # scripts/test.sh --full sets it


def examples(full: int) -> int:
    """The number of examples a property test draws: ``full`` in the full suite, a quarter of it
    (at least one) in CI's, whose 2 cores run the codemod's property tests beside the first pass."""
    return full if FULL else max(1, full // 4)
