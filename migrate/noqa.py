"""``# noqa`` comments, read as ruff reads them.

``# noqa: RTM101`` (one or several codes, separated by commas or spaces) on the line a finding
points at suppresses those codes there; a bare ``# noqa`` suppresses every finding on the line.
A ``# noqa: RTMnnn`` whose code suppressed nothing on its line is itself a finding (RTM900, as
ruff's RUF100), for the rules that ran. Codes of other tools (``# noqa: E501``) are left to them.
Suppressed findings stay in the list, marked ``suppressed``: the summary counts them.

A line whose end is inside a multi-line string, or that continues with a backslash, cannot
take a comment: as ruff does, its ``# noqa`` goes on the line that ends the string or the
continuation (:func:`migrate._directives.comment_lines`, which reads the directives).

A ``# noqa: RTMnnn`` (or a bare ``# noqa``) also stops that rule's rewrite on its line, as
ruff's stops its fix there (:func:`migrate._directives.held_lines`; the engine keeps the line as it is). The rewrites
of one file can depend on each other: when keeping the line would leave the rule's other changes
unsound (a name they use no longer bound), the rule changes nothing in the file, and its other
findings say why.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace

from migrate._directives import CODE, NOQA, Directive, comment_lines, directives, may_move
from migrate.rules import Diagnostic

UNUSED_NOQA = "RTM900"


def apply(diagnostics: Sequence[Diagnostic], text: str, ran: Collection[str]) -> list[Diagnostic]:
    """``diagnostics`` (lines of ``text``) with the flags a ``# noqa`` on their line suppresses
    marked ``suppressed``, and RTM900 for each listed code that suppressed nothing, when RTM900
    is among ``ran`` (the codes of the rules that ran) and so is that code."""
    unused_wanted = UNUSED_NOQA in ran and "RTM" in text
    flag_lines = {d.line for d in diagnostics if not d.fixed}
    moved = comment_lines(text) if may_move(text, flag_lines) else {}
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
    return tuple(CODE.findall(match.group("codes"))) if match else ()


def without_codes(body: str, directive: Directive, codes: Collection[str]) -> str:
    """A line (no line ending) with ``codes`` taken out of its ``directive``; a directive left
    with none goes (text after it stays a comment)."""
    match = NOQA.match(body, directive.col - 1)
    if match is None or directive.codes is None:
        return body
    keep = [c for c in directive.codes if c not in codes]
    if keep:
        return f"{body[: match.start()]}# noqa: {', '.join(keep)}{body[match.end() :]}"
    rest = body[match.end() :].strip()
    if not rest:
        return body[: match.start()].rstrip()
    return f"{body[: match.start()]}{rest if rest.startswith('#') else '# ' + rest}"
