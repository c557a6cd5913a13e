"""``# noqa`` comments, read as ruff reads them.

``# noqa: RTM101`` (one or several codes, separated by commas or spaces) on the line a finding
points at suppresses those codes there; a bare ``# noqa`` suppresses every finding on the line.
A ``# noqa: RTMnnn`` whose code suppressed nothing on its line is itself a finding (RTM900, as
ruff's RUF100), for the rules that ran. Codes of other tools (``# noqa: E501``) are left to them.
Suppressed findings stay in the list, marked ``suppressed``: the summary counts them.

A line whose end is inside a multi-line string, or that continues with a backslash, cannot
take a comment: as ruff does, its ``# noqa`` goes on the line that ends the string or the
continuation (:func:`comment_lines`).

A ``# noqa: RTMnnn`` (or a bare ``# noqa``) also stops that rule's rewrite on its line, as
ruff's stops its fix there (:func:`held_lines`; the engine keeps the line as it is). The rewrites
of one file can depend on each other: when keeping the line would leave the rule's other changes
unsound (a name they use no longer bound), the rule changes nothing in the file, and its other
findings say why.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from migrate.rules import Diagnostic

UNUSED_NOQA = "RTM900"

# ruff's form: the word noqa after a hash, optionally `: CODE[, CODE...]` (the word in any case).
_NOQA = re.compile(r"#\s*(?i:noqa)(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?")
_CODE = re.compile(r"[A-Z]+[0-9]+")


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
        match = _NOQA.search(line) if "noqa" in line.lower() else None
        if match is None or not _in_comment(line, match.start()):
            continue
        codes = tuple(_CODE.findall(match.group("codes"))) if match.group("codes") else None
        found[number] = Directive(number, match.start() + 1, codes)
    return found


def held_lines(text: str, code: str) -> set[int]:
    """The lines of ``text`` (1-based) whose ``# noqa`` covers ``code``: the directive's own line,
    and the lines whose comment must go there (a multi-line string, a backslash continuation)."""
    table = {n: d for n, d in directives(text).items() if d.codes is None or code in d.codes}
    if not table:
        return set()
    held = set(table)
    if _may_move(text, range(1, len(text.splitlines()) + 1)):  # a string or continuation may end on one
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


def _may_move(text: str, lines: Iterable[int]) -> bool:
    """Whether one of ``lines`` may end inside a string or continue (cheap: no tokenizing)."""
    all_lines = text.splitlines()
    for number in lines:
        line = all_lines[number - 1] if 0 < number <= len(all_lines) else ""
        if line.endswith("\\") or '"""' in line or "'''" in line:
            return True
    return False


def apply(diagnostics: Sequence[Diagnostic], text: str, ran: Collection[str]) -> list[Diagnostic]:
    """``diagnostics`` (lines of ``text``) with the flags a ``# noqa`` on their line suppresses
    marked ``suppressed``, and RTM900 for each listed code that suppressed nothing, when RTM900
    is among ``ran`` (the codes of the rules that ran) and so is that code."""
    unused_wanted = UNUSED_NOQA in ran and "RTM" in text
    flag_lines = {d.line for d in diagnostics if not d.fixed}
    moved = comment_lines(text) if _may_move(text, flag_lines) else {}
    wanted = flag_lines | {moved[line] for line in flag_lines if line in moved}
    table = directives(text, None if unused_wanted else wanted)
    if not table:
        return list(diagnostics)
    out: list[Diagnostic] = []
    used: set[tuple[int, str]] = set()
    for d in diagnostics:
        directive = table.get(d.line) or table.get(moved.get(d.line, d.line))
        if not d.fixed and directive is not None and (directive.codes is None or d.code in directive.codes):
            used.add((directive.line, d.code))
            out.append(replace(d, suppressed=True))
        else:
            out.append(d)
    if UNUSED_NOQA in ran:
        for directive in table.values():
            listed_here = directive.codes or ()
            unused = [c for c in listed_here if c in ran and c != UNUSED_NOQA and (directive.line, c) not in used]
            if unused:  # one without codes is never reported: it may serve other tools
                listed = ", ".join(unused)
                message = f"unused `noqa` directive (unused: {listed}){_UNUSED_END}"
                out.append(Diagnostic(UNUSED_NOQA, directive.line, directive.col, message, False))
    return out


_UNUSED_END = ": nothing on this line is flagged so; remove it"
_UNUSED_LISTED = re.compile(r"\(unused: (?P<codes>[A-Z0-9, ]+)\)" + re.escape(_UNUSED_END))


def unused_codes(diagnostic: Diagnostic) -> tuple[str, ...]:
    """The codes an RTM900 finding names as unused on its line (none for another finding)."""
    match = _UNUSED_LISTED.search(diagnostic.message) if diagnostic.code == UNUSED_NOQA else None
    return tuple(_CODE.findall(match.group("codes"))) if match else ()


def without_codes(body: str, directive: Directive, codes: Collection[str]) -> str:
    """A line (no line ending) with ``codes`` taken out of its ``directive``; a directive left
    with none goes (text after it stays a comment)."""
    match = _NOQA.match(body, directive.col - 1)
    if match is None or directive.codes is None:
        return body
    keep = [c for c in directive.codes if c not in codes]
    if keep:
        return f"{body[: match.start()]}# noqa: {', '.join(keep)}{body[match.end() :]}"
    rest = body[match.end() :].strip()
    if not rest:
        return body[: match.start()].rstrip()
    return f"{body[: match.start()]}{rest if rest.startswith('#') else '# ' + rest}"
