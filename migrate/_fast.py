"""Rewrites as text edits at ``ast`` positions: the rewriting rules' fast path.

A libcst rewrite costs tens of milliseconds even for a 20-line file (its parse, scope and
qualified-name metadata, and code generation), against a fraction of a millisecond for
the ``ast`` index the engine has already built. So a rewriting rule may also have a
``fast`` form: for the shapes whose libcst output is known exactly (an import statement
alone on its line and spelled the canonical way, a call of a plain ``name.attr``), it
builds the new text by replacing source ranges; for anything else it answers None and the
engine runs the rule's libcst form, unchanged. The fast form never guesses:
``tests/migrate/test_fast_path.py`` checks on generated modules that both forms give the
same text and the same findings, and that the common shapes do take the fast form.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from migrate import _imports
from migrate._index import _LINE_BREAK, Index

_TRAILER = re.compile(r"[ \t]*(?:#.*)?")  # what may follow a statement on its line


class Edits:
    """Non-overlapping replacements of ranges of ``index.text``, applied at once."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._spans: list[tuple[int, int, str]] = []

    def replace(self, node: ast.AST, text: str) -> None:
        """Replace the source of ``node`` (as ``ast`` delimits it) with ``text``."""
        start = self.index.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.index.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        self._spans.append((start, end, text))

    def replace_range(self, start: int, end: int, text: str) -> None:
        self._spans.append((start, end, text))

    def insert(self, offset: int, text: str) -> None:
        self._spans.append((offset, offset, text))

    def add_line_after(self, line: Line, text: str) -> None:
        """A new line holding ``text`` right after ``line`` (the file's own line break)."""
        newline = _newline(self.index.text)
        self.insert(line.end, text + newline if line.has_break else newline + text)

    def apply(self) -> str:
        text = self.index.text
        pieces: list[str] = []
        last = 0
        for start, end, new in sorted(self._spans, key=lambda s: (s[0], s[1])):
            if start < last:
                raise AssertionError(f"overlapping edits at offset {start}")
            pieces += (text[last:start], new)
            last = end
        pieces.append(text[last:])
        return "".join(pieces)


@dataclass(frozen=True)
class Line:
    """A statement that has its line to itself."""

    indent: str  # the spaces and tabs before it
    end: int  # offset just after the line (after its line break, if it has one)
    has_break: bool


def alone(index: Index, node: ast.stmt) -> Line | None:
    """``node``'s line(s) when the statement starts its first line and nothing follows it on
    its last but a comment (no ``;``, no other statement, no continuation); else None."""
    first, last = index.line(node.lineno), index.line(node.end_lineno)  # type: ignore[arg-type]
    if not (first.isascii() and last.isascii()):  # ast's columns are UTF-8 bytes; keep to the plain case
        return None
    indent, trailer = first[: node.col_offset], last[node.end_col_offset :]
    if indent.strip(" \t") or not _TRAILER.fullmatch(trailer):
        return None
    end = index.offset(node.end_lineno, 0) + len(last)  # type: ignore[arg-type]
    match = _LINE_BREAK.match(index.text, end)
    return Line(indent, match.end() if match else end, match is not None)


def _newline(text: str) -> str:
    """The line break new lines get: the file's first one (libcst's ``default_newline``)."""
    match = _LINE_BREAK.search(text)
    return match.group() if match else "\n"


def from_import(module: str, aliases: Iterable[tuple[str, str | None]]) -> str:
    """``from <module> import a, b as c`` (libcst's spelling of a rebuilt import)."""
    names = (name if asname is None else f"{name} as {asname}" for name, asname in aliases)
    return f"from {module} import " + ", ".join(names)


def canonical(index: Index, node: ast.ImportFrom) -> bool:
    """The statement is spelled as :func:`from_import` would spell it (single spaces), or
    as a parenthesized list of those names, one or more per line, without comments: so
    rebuilding it loses nothing but the line breaks libcst's rebuild drops too."""
    if node.level or node.module is None:
        return False
    aliases = [name if asname is None else f"{name} as {asname}" for name, asname in _aliases(node)]
    if node.lineno == node.end_lineno and index.source(node) == from_import(node.module, _aliases(node)):
        return True
    start = index.offset(node.lineno, node.col_offset)
    source = index.text[start : index.offset(node.end_lineno, node.end_col_offset)]  # type: ignore[arg-type]
    head = f"from {node.module} import ("
    if not (source.startswith(head) and source.endswith(")")):
        return False
    inner = source[len(head) : -1]
    if "#" in inner or "\\" in inner:
        return False
    pieces = [piece.strip() for piece in inner.split(",")]
    if len(pieces) > 1 and pieces[-1] == "":
        pieces.pop()  # a trailing comma
    return pieces == aliases


def _aliases(node: ast.ImportFrom) -> list[tuple[str, str | None]]:
    return [(a.name, a.asname) for a in node.names]


def binds_module(node: ast.Import | ast.ImportFrom, module: str) -> bool:
    """The statement binds ``module`` itself (``from ray import air``, ``import ray.air``,
    ``import ray.air.config``): a shape the fast path leaves to libcst."""
    parent, _, name = module.rpartition(".")
    if isinstance(node, ast.Import):
        return any(a.name == module or a.name.startswith(module + ".") for a in node.names)
    return node.level == 0 and node.module == parent and any(a.name == name for a in node.names)


def words(text: str, word: str) -> int:
    """How many times ``word`` occurs in ``text`` other than after a dot: an upper bound of
    its uses as an identifier, found without walking the tree."""
    return len(re.findall(rf"(?<![\w.]){re.escape(word)}\b", text))


def free_alias(index: Index, submodule: str) -> str:
    """``train``, ``ray_train``, ``ray_train_api``, ``ray_train_2``, ...: the first the module
    does not use (``migrate._imports.choose_alias`` on the ``ast`` index)."""
    if not words(index.text, submodule):
        return submodule  # not even spelled (``ray.train`` does not count): no need to walk
    return _imports.choose_alias(index.identifiers, index.bindings, submodule)
