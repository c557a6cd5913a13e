"""Tests of compat_core, one file per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ("compat", "compat_core", "v1", "v2")


def runtime_sources(*, but: str) -> Iterator[tuple[str, Path]]:
    """``(path relative to the checkout, path)`` of every source file of the runtime's packages,
    ``but`` (a relative path) left out."""
    for package in RUNTIME:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative != but:
                yield relative, path
