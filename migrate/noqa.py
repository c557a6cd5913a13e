"""``# noqa`` comments, read as ruff reads them.

``# noqa: RTM101`` (one or several codes, separated by commas or spaces) on the line a finding
points at suppresses those codes there; a bare ``# noqa`` suppresses every finding on the line.
A ``# noqa: RTMnnn`` whose code suppressed nothing on its line is itself a finding (RTM900, as
ruff's RUF100), for the rules that ran. Codes of other tools (``# noqa: E501``) are left to them.
Suppressed findings stay in the list, marked ``suppressed``: the summary counts them.

Rewrites are not suppressed: a ``# noqa`` silences what would need a person, and the rewrites
of one file depend on each other (use ``--ignore`` or ``per-file-ignores`` to turn one off).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection, Sequence
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


def directives(source: str) -> dict[int, Directive]:
    """The ``# noqa`` comments of ``source`` by line (comments only, not text in strings)."""
    if "noqa" not in source.lower():
        return {}
    found: dict[int, Directive] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return _directives_by_line(source)
    for token in tokens:
        if token.type == tokenize.COMMENT:
            match = _NOQA.search(token.string)
            if match:
                line, col = token.start[0], token.start[1] + match.start() + 1
                codes = tuple(_CODE.findall(match.group("codes"))) if match.group("codes") else None
                found[line] = Directive(line, col, codes)
    return found


def _directives_by_line(source: str) -> dict[int, Directive]:
    found = {}
    for number, line in enumerate(source.splitlines(), start=1):
        match = _NOQA.search(line)
        if match:
            codes = tuple(_CODE.findall(match.group("codes"))) if match.group("codes") else None
            found[number] = Directive(number, match.start() + 1, codes)
    return found


def apply(diagnostics: Sequence[Diagnostic], text: str, ran: Collection[str]) -> list[Diagnostic]:
    """``diagnostics`` (lines of ``text``) with the flags a ``# noqa`` on their line suppresses
    marked ``suppressed``, and RTM900 for each listed code that suppressed nothing, when RTM900
    is among ``ran`` (the codes of the rules that ran) and so is that code."""
    table = directives(text)
    if not table:
        return list(diagnostics)
    out: list[Diagnostic] = []
    used: set[tuple[int, str]] = set()
    for d in diagnostics:
        directive = table.get(d.line)
        if not d.fixed and directive is not None and (directive.codes is None or d.code in directive.codes):
            used.add((d.line, d.code))
            out.append(replace(d, suppressed=True))
        else:
            out.append(d)
    if UNUSED_NOQA in ran:
        for directive in table.values():
            listed_here = directive.codes or ()
            unused = [c for c in listed_here if c in ran and c != UNUSED_NOQA and (directive.line, c) not in used]
            if unused:  # one without codes is never reported: it may serve other tools
                listed = ", ".join(unused)
                message = f"unused `noqa` directive (unused: {listed}): nothing on this line is flagged so; remove it"
                out.append(Diagnostic(UNUSED_NOQA, directive.line, directive.col, message, False))
    return out
