"""Reading ``# noqa`` comments, as ruff reads them: which lines carry a directive and for which
codes, and where a comment for a line that cannot take one goes. No rule or finding is needed
here (:mod:`migrate.noqa` applies directives to findings; a rule may read them itself).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

# ruff's form: the word noqa after a hash, optionally `: CODE[, CODE...]` (the word in any case).
NOQA = re.compile(r"#\s*(?i:noqa)(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?")
CODE = re.compile(r"[A-Z]+[0-9]+")


@dataclass(frozen=True)
class Directive:
    line: int
    col: int
    codes: tuple[str, ...] | None  # None: no codes (every finding on the line)


def directives(source: str, lines: Iterable[int] | None = None) -> dict[int, Directive]:
    """The ``# noqa`` comments of ``source`` by line, on ``lines`` only when given (1-based).
    A match must be a comment, not text in a string (each candidate line is tokenized alone:
    tokenizing whole files cost more than the rules on a large tree)."""
    all_lines = source.splitlines()
    numbers = range(1, len(all_lines) + 1) if lines is None else sorted(set(lines))
    found: dict[int, Directive] = {}
    for number in numbers:
        if not 0 < number <= len(all_lines):
            continue
        line = all_lines[number - 1]
        match = NOQA.search(line) if "noqa" in line.lower() else None
        if match is None or not _in_comment(line, match.start()):
            continue
        codes = tuple(CODE.findall(match.group("codes"))) if match.group("codes") else None
        found[number] = Directive(number, match.start() + 1, codes)
    return found


def held_lines(text: str, code: str) -> set[int]:
    """The lines of ``text`` (1-based) whose ``# noqa`` covers ``code``: the directive's own line,
    and the lines whose comment must go there (a multi-line string, a backslash continuation)."""
    table = {n: d for n, d in directives(text).items() if d.codes is None or code in d.codes}
    if not table:
        return set()
    held = set(table)
    if may_move(text, range(1, len(text.splitlines()) + 1)):  # a string or continuation may end on one
        held |= {line for line, target in comment_lines(text).items() if target in table}
    return held


class PartOfLarger(Exception):
    """The line is part of a larger construct that cannot be tokenized alone before any comment."""


def line_comment(line: str) -> tuple[int, str] | None:
    """The column and text of one physical line's comment (a ``#`` in a string is none), or
    None; :class:`PartOfLarger` when the line cannot be read alone up to its comment. Each line
    is tokenized alone: tokenizing whole files cost more than the rules on a large tree."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return token.start[1], token.string
    except (tokenize.TokenError, SyntaxError, IndentationError) as exc:
        raise PartOfLarger(line) from exc
    return None


def _in_comment(line: str, col: int) -> bool:
    try:
        comment = line_comment(line)
    except PartOfLarger:
        return True  # as before: a directive on such a line is taken as a comment
    return comment is not None and comment[0] <= col


def comment_lines(source: str) -> dict[int, int]:
    """Lines whose end cannot take a comment (inside a multi-line string, or continued with a
    backslash), each mapped to the line where a comment for it goes: the line the string or
    the continuation ends on. Lines not in the map take their own comments."""
    lines = source.splitlines()
    moved: dict[int, int] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return moved
    opened: list[int] = []  # f-string starts (Python 3.12 splits f-strings into tokens)
    for token in tokens:
        name = tokenize.tok_name[token.type]
        if name == "FSTRING_START":
            opened.append(token.start[0])
        elif name == "FSTRING_END" and opened:
            for line in range(opened.pop(), token.end[0]):
                moved[line] = token.end[0]
        elif token.type == tokenize.STRING and token.start[0] != token.end[0]:
            for line in range(token.start[0], token.end[0]):
                moved[line] = token.end[0]
    for number in range(len(lines), 0, -1):  # backslash continuations, last first: chains resolve
        if number not in moved and lines[number - 1].endswith("\\") and number < len(lines):
            moved[number] = moved.get(number + 1, number + 1)
    for line, target in moved.items():  # a string that ends on a continued line, and the reverse
        while target in moved and moved[target] != target:
            target = moved[target]
        moved[line] = target
    return moved


def may_move(text: str, lines: Iterable[int]) -> bool:
    """Whether one of ``lines`` may end inside a string or continue (cheap: no tokenizing)."""
    all_lines = text.splitlines()
    for number in lines:
        line = all_lines[number - 1] if 0 < number <= len(all_lines) else ""
        if line.endswith("\\") or '"""' in line or "'''" in line:
            return True
    return False
