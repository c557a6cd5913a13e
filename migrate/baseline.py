"""``--add-noqa``: mark every current finding with ``# noqa: RTMnnn``, as ruff's ``--add-noqa``.

A team adopting the codemod in CI on a large codebase marks what is there today, then gates
on new findings only. Each flagged line gets one directive with the codes found there: merged
into a ``# noqa:`` comment the line already has (another tool's codes are kept), appended
after any other comment, and put on the line that ends a multi-line string or a backslash
continuation when the finding's own line cannot take a comment (:func:`_directives.comment_lines`).
Pending rewrites are marked too: a ``# noqa: RTMnnn`` stops that rule's rewrite on its line
(:func:`migrate._directives.held_lines`), so after ``--add-noqa`` a ``--check`` of the same tree passes
and the next new V1 call fails it. Marking can make new findings (a held rewrite leaves old API
that RTM100 flags): ``--add-noqa`` marks again until nothing new is found. A second run adds
nothing. A notebook cell that does not parse cannot carry a directive: ``per-file-ignores``
takes it (``"notebooks/sweep.ipynb" = ["ERROR"]``), as ruff's does.

A directive can stop being used as others are added: ``# noqa: RTM002`` on an import the
rewrite of a call would change is unused once the call's own directive holds that rewrite.
So each round also takes out every code RTM900 finds unused (:func:`remove_unused`; a directive
left with none goes), and ``--add-noqa`` ends only when a round neither marks nor removes
anything: then ``--check`` finds nothing on the same tree, whatever it holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from migrate import _directives, noqa
from migrate.rules import Diagnostic

# Findings --add-noqa does not mark: an unused directive is removed, not silenced.
NOT_MARKED = frozenset({noqa.UNUSED_NOQA, "ERROR"})


@dataclass(frozen=True)
class Marked:
    text: str
    added: int  # directives added or extended


def codes_by_line(diagnostics: Sequence[Diagnostic]) -> dict[int, set[str]]:
    """The codes to mark (flags and pending rewrites), by the line each finding points at."""
    found: dict[int, set[str]] = {}
    for d in diagnostics:
        if not d.suppressed and d.code not in NOT_MARKED:
            found.setdefault(d.line, set()).add(d.code)
    return found


def add_noqa(text: str, codes: Mapping[int, set[str]]) -> Marked:
    """``text`` with ``# noqa: CODES`` on each line of ``codes`` (1-based), or on the line its
    comment must go to; the number of directives added or extended."""
    if not codes:
        return Marked(text, 0)
    moved = _directives.comment_lines(text)
    wanted: dict[int, set[str]] = {}
    for at, found in codes.items():
        wanted.setdefault(moved.get(at, at), set()).update(found)
    lines = text.splitlines(keepends=True)
    existing = _directives.directives(text, wanted)
    added = 0
    for number, found in sorted(wanted.items()):
        if not 0 < number <= len(lines):
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        directive = existing.get(number)
        if directive is None:
            new_body = f"{body.rstrip()}  # noqa: {', '.join(sorted(found))}"
        elif directive.codes is None:  # a bare directive silences every code already
            continue
        else:
            missing = sorted(found - set(directive.codes))
            if not missing:
                continue
            new_body = _extend(body, directive.col - 1, missing)
        lines[number - 1] = new_body + ending
        added += 1
    return Marked("".join(lines), added)


_CODES_END = re.compile(r"#\s*(?i:noqa):\s?[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*")


def unused_by_line(diagnostics: Sequence[Diagnostic]) -> dict[int, set[str]]:
    """The codes RTM900 finds unused, by the line of their directive."""
    found: dict[int, set[str]] = {}
    for d in diagnostics:
        codes = noqa.unused_codes(d) if not d.suppressed else ()
        if codes:
            found.setdefault(d.line, set()).update(codes)
    return found


def remove_unused(text: str, unused: Mapping[int, set[str]]) -> Marked:
    """``text`` with the codes of ``unused`` (by line, 1-based) taken out of their directives;
    ``added`` counts the directives changed."""
    if not unused:
        return Marked(text, 0)
    lines = text.splitlines(keepends=True)
    table = _directives.directives(text, unused)
    changed = 0
    for number, codes in sorted(unused.items()):
        directive = table.get(number)
        if directive is None:
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        new_body = noqa.without_codes(body, directive, codes)
        if new_body != body:
            lines[number - 1] = new_body + line[len(body) :]
            changed += 1
    return Marked("".join(lines), changed)


def _extend(body: str, start: int, codes: list[str]) -> str:
    """``body`` with ``codes`` appended to the code list of its ``# noqa:`` at ``start``."""
    match = _CODES_END.match(body, start)
    assert match is not None  # directives() found codes there
    end = len(match.group(0).rstrip(", \t")) + start
    return f"{body[:end]}, {', '.join(codes)}{body[end:]}"


def add_noqa_to_notebook(text: str, diagnostics: Sequence[Diagnostic], *, remove: bool = False) -> Marked:
    """A notebook's cells marked (``remove``: their unused codes taken out, as
    :func:`remove_unused`): its diagnostics name their cell (``cell N: ...``) and carry the
    line within it. The other bytes of the file stay as they were."""
    from migrate.notebooks import cell_number, splice

    by_cell: dict[int, list[Diagnostic]] = {}
    for d in diagnostics:
        number = cell_number(d)
        if number is not None:
            by_cell.setdefault(number, []).append(d)
    notebook: dict[str, Any] = json.loads(text)
    added = 0
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        found = (unused_by_line if remove else codes_by_line)(by_cell.get(number, []))
        if not found or cell.get("cell_type") != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        marked = (remove_unused if remove else add_noqa)(source, found)
        if marked.added:
            added += marked.added
            new = marked.text
            cell["source"] = new.splitlines(keepends=True) if isinstance(cell["source"], list) else new
    if not added:
        return Marked(text, 0)
    return Marked(splice(text, notebook), added)
