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
    """How ``a``'s lines became ``b``'s (difflib's opcodes, computed once per pair). The lines
    both start and end with are equal blocks as they are; between them, difflib without its
    junk heuristic, unless the lines there are many (a line repeated thousands of times, as in
    generated data, makes it quadratic): then with it, which skips lines too common to anchor."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    middle_a, middle_b = a[start : len(a) - end], b[start : len(b) - end]
    many = len(middle_a) * len(middle_b) > _EXACT_PAIRS
    middle = difflib.SequenceMatcher(None, middle_a, middle_b, autojunk=many).get_opcodes()
    ops: list[tuple[str, int, int, int, int]] = [("equal", 0, start, 0, start)] if start else []
    for tag, i1, i2, j1, j2 in middle:
        if middle_a or middle_b:
            ops.append((tag, i1 + start, i2 + start, j1 + start, j2 + start))
    if end:
        ops.append(("equal", len(a) - end, len(a), len(b) - end, len(b)))
    return _merged(ops)


# Line pairs between the common start and end compared without difflib's junk heuristic, at most.
_EXACT_PAIRS = 1_000_000


def _merged(ops: list[tuple[str, int, int, int, int]]) -> Opcodes:
    """Adjacent equal blocks as one (as difflib gives them)."""
    merged: list[tuple[str, int, int, int, int]] = []
    for op in ops:
        if op[1] == op[2] and op[3] == op[4]:
            continue
        if merged and op[0] == "equal" and merged[-1][0] == "equal":
            tag, i1, _, j1, _ = merged[-1]
            merged[-1] = (tag, i1, op[2], j1, op[4])
        else:
            merged.append(op)
    return merged


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
        scores = [(_similarity(a[i], b[j]), -j) for j in range(low, high + 1)]
        best = -max(scores)[1]
        mapping[i] = best
        low = best


# Characters two lines may have together and still be compared by difflib's ratio (quadratic in
# the lines' length); longer pairs are compared by the characters they share (linear).
_RATIO_CHARS = 2_000


def _similarity(x: str, y: str) -> float:
    """How alike two lines are, 0 to 1: difflib's ratio, or for long lines its linear bound
    ``quick_ratio`` (the characters they share, whatever their order)."""
    matcher = difflib.SequenceMatcher(None, x, y, autojunk=False)
    return matcher.ratio() if len(x) + len(y) <= _RATIO_CHARS else matcher.quick_ratio()
