"""Jupyter notebooks: migrate each code cell; IPython magics are masked, then restored.

Cells are independent: a cell that does not parse as Python (automagic such as
``pip install ray``, shell lines, a syntax error) is reported with its number and left as
it is, and every other cell is still migrated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from migrate.rules import Diagnostic

UNPARSED_CELL = "ERROR"

_MAGIC = re.compile(r"^\s*[%!?]")
_MASK = "# __migrate_magic_{}__"


def migrate_notebook(text: str, migrate: Callable[[str], tuple[str, list[Diagnostic]]]) -> tuple[str, list[Diagnostic]]:
    """Return the notebook with migrated code cells; diagnostics say ``cell N`` in the message."""
    notebook = json.loads(text)
    diagnostics: list[Diagnostic] = []
    changed = False
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        masked, magics = _mask(source)
        try:
            new, found = migrate(masked)
        except SyntaxError as exc:
            message = f"cell {number}: does not parse as Python ({exc.msg}); cell left untouched"
            diagnostics.append(Diagnostic(UNPARSED_CELL, exc.lineno or 1, exc.offset or 1, message, False))
            continue
        diagnostics.extend(replace(d, message=f"cell {number}: {d.message}") for d in found)
        new = _unmask(new, magics)
        if new != source:
            changed = True
            cell["source"] = new.splitlines(keepends=True) if isinstance(cell["source"], list) else new
    if not changed:
        return text, diagnostics
    spliced = _splice(text, notebook)
    if spliced is not None:
        return spliced, diagnostics
    indent = _indent(text)  # the sources could not be located in the text: write the whole notebook
    out = json.dumps(notebook, indent=indent, ensure_ascii=False)
    return out + ("\n" if text.endswith("\n") else ""), diagnostics


def _splice(text: str, notebook: dict[str, Any]) -> str | None:
    """``text`` with only the ``source`` values of the changed cells replaced, every other byte
    as it was (markdown, outputs, metadata, escapes, key order). None when the cells' sources
    cannot be matched one by one to ``"source":`` values in the text."""
    original = json.loads(text).get("cells", [])
    cells = notebook.get("cells", [])
    decoder = json.JSONDecoder()
    located: list[tuple[int, int]] = []
    expected = iter(original)
    want = next(expected, None)
    for match in _SOURCE_KEY.finditer(text):
        if want is None:
            break
        try:
            value, end = decoder.raw_decode(text, match.end())
        except ValueError:
            continue
        if value == want.get("source"):
            located.append((match.end(), end))
            want = next(expected, None)
    if want is not None or len(located) != len(cells):
        return None
    unit = _indent(text)
    ascii_only = "\\u" in text  # the file escapes non-ASCII characters: keep doing so
    pieces: list[str] = []
    last = 0
    for (start, end), before, after in zip(located, original, cells, strict=True):
        if before.get("source") == after.get("source"):
            continue
        line_start = text.rfind("\n", 0, start) + 1
        margin = re.match(r"[ \t]*", text[line_start:start]).group(0)  # type: ignore[union-attr]
        dumped = json.dumps(after["source"], indent=unit, ensure_ascii=ascii_only).replace("\n", "\n" + margin)
        pieces += [text[last:start], dumped]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


_SOURCE_KEY = re.compile(r'"source"\s*:\s*')


def _mask(source: str) -> tuple[str, list[str]]:
    lines = source.splitlines(keepends=True)
    magics: list[str] = []
    for i, line in enumerate(lines):
        if _MAGIC.match(line):
            end = "\n" if line.endswith("\n") else ""
            lines[i] = _MASK.format(len(magics)) + end
            magics.append(line.rstrip("\n"))
    return "".join(lines), magics


def _unmask(source: str, magics: list[str]) -> str:
    for i, magic in enumerate(magics):
        source = source.replace(_MASK.format(i), magic, 1)
    return source


def _indent(text: str) -> int:
    match = re.search(r"\n( +)\"", text)
    return len(match.group(1)) if match else 1
