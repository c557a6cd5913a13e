"""How bad a finding is: what it does to a program the day ``RAY_TRAIN_V2_ENABLED`` flips.

Worst first, the order ``--fail-on`` and every ranking use. A flag rule declares one of the
first three (tests/migrate/test_conventions.py holds each to its docs); a rewrite is ``fix``.
"""

from __future__ import annotations

from typing import Literal

Severity = Literal["breaks", "silent", "warns", "fix"]
SEVERITIES: tuple[Severity, ...] = ("breaks", "silent", "warns", "fix")
MEANING: dict[str, str] = {
    "breaks": "raises under V2 (at import, at construction or in fit())",
    "silent": "runs under V2 with other results, files or error handling: nothing raises",
    "warns": "works under V2; only a warning or a stale marker is left",
    "fix": "mechanical: `python -m migrate` rewrites it",
}


def at_least(severity: str, threshold: str) -> bool:
    """``severity`` is ``threshold`` or worse."""
    order: tuple[str, ...] = SEVERITIES
    return order.index(severity) <= order.index(threshold)
