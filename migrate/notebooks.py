"""Jupyter notebooks: the code cells are one module, as the kernel runs them.

A notebook's cells share one namespace: most import in their first cell and use the names
later. The code cells are joined, in order, into one module (with a boundary statement
between cells), migrated as one file, and split back, so an import is kept while a later
cell uses it and uses in later cells are rewritten or flagged (ruff reads notebooks the same
way). IPython magics and shell lines are masked as comments, then restored. A cell that does
not parse as Python (``pip install ray``, a ``%%bash`` cell, a syntax error) is reported with
its number and left as it is; the other cells are still migrated together.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from migrate.rules import Diagnostic

UNPARSED_CELL = "ERROR"

_MAGIC = re.compile(r"^\s*[%!?]")
_MASK = "# __migrate_magic_{}__"
# Between two cells in the joined module: a bare string statement binds no name, calls
# nothing and is never a docstring (it never comes first), so no rule acts on it.
_BOUNDARY = '"__migrate_cell_{}__"'
_BOUNDARY_LINE = re.compile(r'^"__migrate_cell_(\d+)__"\n', re.MULTILINE)


class CellBoundaryLost(Exception):
    """A rewrite moved or removed a boundary between cells: a bug of the tool (nothing is written)."""


@dataclass
class _Cell:
    number: int  # 1-based among all cells, as Jupyter shows them
    cell: dict[str, Any]
    source: str  # as in the notebook
    masked: str  # magics masked, ending with a newline
    magics: list[str]


def code_size(text: str) -> int | None:
    """The UTF-8 bytes of a notebook's code cells (what the codemod reads as code; outputs and
    attachments are not), or None when it is not a notebook's JSON."""
    try:
        notebook = json.loads(text)
        total = 0
        for cell in notebook.get("cells", []):
            if cell.get("cell_type") == "code":
                source = cell.get("source", "")
                total += len((source if isinstance(source, str) else "".join(source)).encode("utf-8"))
        return total
    except (ValueError, AttributeError, TypeError):
        return None


def migrate_notebook(
    text: str, migrate: Callable[[str], tuple[str, list[Diagnostic]]], *, lines_of: str = "input"
) -> tuple[str, list[Diagnostic]]:
    """Return the notebook with migrated code cells; diagnostics say ``cell N`` in the message
    and carry the line within that cell (of the input cell, or of the output cell when
    ``lines_of="output"``)."""
    notebook = json.loads(text)
    diagnostics: list[Diagnostic] = []
    cells: list[_Cell] = []
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if not source.strip():
            continue
        masked, magics = _mask(source)
        try:
            ast.parse(masked)
        except SyntaxError as exc:
            diagnostics.append(_unparsed(number, exc, exc.lineno or 1, exc.offset or 1))
            continue
        cells.append(_Cell(number, cell, source, masked if masked.endswith("\n") else masked + "\n", magics))
    while cells:
        joined = _join(cells)
        try:
            new, found = migrate(joined)
        except SyntaxError as exc:  # only libcst's parser refuses it: leave that cell out, as ast's refusals
            which, line = _locate(cells, _starts(joined, cells), exc.lineno or 1)
            diagnostics.append(_unparsed(which.number, exc, line, exc.offset or 1))
            cells.remove(which)
            continue
        break
    else:
        return text, sorted(diagnostics, key=_cell_order)
    pieces = _split(new, cells)
    reference = joined if lines_of == "input" else new
    starts = _starts(reference, cells)
    for d in found:
        cell, line = _locate(cells, starts, d.line)
        diagnostics.append(replace(d, line=line, message=f"cell {cell.number}: {d.message}"))
    changed = False
    for cell, piece in zip(cells, pieces, strict=True):
        if not cell.source.endswith("\n") and piece.endswith("\n"):
            piece = piece[:-1]
        new_source = _unmask(piece, cell.magics)
        if new_source != cell.source:
            changed = True
            original = cell.cell["source"]
            cell.cell["source"] = new_source.splitlines(keepends=True) if isinstance(original, list) else new_source
    diagnostics.sort(key=_cell_order)
    if not changed:
        return text, diagnostics
    return splice(text, notebook), diagnostics


def splice(text: str, notebook: dict[str, Any]) -> str:
    """The notebook ``text`` with the cells' sources of ``notebook`` (the same cells, some
    changed): every other byte as it was when the sources can be located in the text."""
    spliced = _splice(text, notebook)
    if spliced is not None:
        return spliced
    indent = _indent(text)  # the sources could not be located in the text: write the whole notebook
    out = json.dumps(notebook, indent=indent, ensure_ascii=False)
    return out + ("\n" if text.endswith("\n") else "")


def cell_number(d: Diagnostic) -> int | None:
    """The cell a notebook's finding names (``cell 3: ...``)."""
    match = _CELL.match(d.message)
    return int(match.group(1)) if match else None


_CELL = re.compile(r"cell (\d+): ")


def _unparsed(number: int, exc: SyntaxError, line: int, col: int) -> Diagnostic:
    message = f"cell {number}: does not parse as Python ({exc.msg}); cell left untouched"
    return Diagnostic(UNPARSED_CELL, line, col, message, False)


def _cell_order(d: Diagnostic) -> tuple[int, int, int, str]:
    number = int(d.message[5 : d.message.index(":")])
    return number, d.line, d.col, d.code


def _join(cells: list[_Cell]) -> str:
    parts = [cells[0].masked]
    for i in range(1, len(cells)):
        parts.append(_BOUNDARY.format(i) + "\n")
        parts.append(cells[i].masked)
    return "".join(parts)


def _split(new: str, cells: list[_Cell]) -> list[str]:
    """The migrated joined module cut back into cells at the boundaries."""
    pieces: list[str] = []
    last = 0
    for expected, match in enumerate(_BOUNDARY_LINE.finditer(new), start=1):
        if int(match.group(1)) != expected:
            raise CellBoundaryLost(f"cell boundary {expected} out of place")
        pieces.append(new[last : match.start()])
        last = match.end()
    pieces.append(new[last:])
    if len(pieces) != len(cells):
        raise CellBoundaryLost(f"{len(pieces) - 1} cell boundaries where {len(cells) - 1} were written")
    return pieces


def _starts(joined: str, cells: list[_Cell]) -> list[int]:
    """The 1-based line of ``joined`` on which each cell starts."""
    starts = [1]
    for match in _BOUNDARY_LINE.finditer(joined):
        starts.append(joined.count("\n", 0, match.end()) + 1)
    return starts[: len(cells)]


def _locate(cells: list[_Cell], starts: list[int], line: int) -> tuple[_Cell, int]:
    """The cell holding line ``line`` of the joined module, and the line within that cell."""
    index = max((i for i, start in enumerate(starts) if start <= line), default=0)
    return cells[index], max(1, line - starts[index] + 1)


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
