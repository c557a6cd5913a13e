"""Where each line of a text went in its rewrite: the findings made on one text are moved to the
lines of another (the input's for ``--diff``/``--check``, the output's after a write), and the
comment repairs find the line a removed line's comment belongs to."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


def line_map(old: str, new: str) -> list[int]:
    """For each line of ``old`` (0-based), the line of ``new`` it became (or sits nearest).
    In a block of changed lines, each old line goes to the most similar new line at or after
    the previous one's (``session.report(m)`` to ``train.report(m)``, not to an import the
    rewrite added above it)."""
    a, b = old.splitlines(), new.splitlines()
    return line_map_of(a, b, opcodes(a, b))


Opcodes = Sequence[tuple[str, int, int, int, int]]


def opcodes(a: list[str], b: list[str]) -> Opcodes:
    """How ``a``'s lines became ``b``'s (difflib's opcodes, computed once per pair)."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


def line_map_of(a: list[str], b: list[str], opcodes: Opcodes) -> list[int]:
    """:func:`line_map` of two texts' lines, given their :func:`opcodes`."""
    mapping = [0] * max(len(a), 1)
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "replace" and (i2 - i1) * (j2 - j1) <= _SIMILARITY_BUDGET:
            _map_by_similarity(a, b, i1, i2, j1, j2, mapping)
            continue
        for i in range(i1, i2):
            mapping[i] = j1 + (i - i1 if tag == "equal" else min(i - i1, max(j2 - j1 - 1, 0)))
    return mapping


# Line pairs compared in one changed block at most; a larger block maps by position.
_SIMILARITY_BUDGET = 400


def _map_by_similarity(a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int, mapping: list[int]) -> None:
    """Map ``a[i1:i2]`` into ``b[j1:j2]``: each line to its most similar line, in order."""
    low = j1
    for i in range(i1, i2):
        left = i2 - i - 1  # old lines still to place after this one
        high = max(low, j2 - 1 - min(left, j2 - 1 - low))  # leave room for them when there is
        scores = [(difflib.SequenceMatcher(None, a[i], b[j], autojunk=False).ratio(), -j) for j in range(low, high + 1)]
        best = -max(scores)[1]
        mapping[i] = best
        low = best
