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

import libcst as cst

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
        except cst.ParserSyntaxError as exc:
            message = f"cell {number}: does not parse as Python ({exc.message}); cell left untouched"
            diagnostics.append(Diagnostic(UNPARSED_CELL, exc.raw_line, exc.raw_column + 1, message, False))
            continue
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
    indent = _indent(text)
    out = json.dumps(notebook, indent=indent, ensure_ascii=False)
    return out + ("\n" if text.endswith("\n") else ""), diagnostics


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
