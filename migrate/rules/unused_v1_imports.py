"""RTM006: imports of V1-only modules that nothing uses are removed."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from migrate import _fast
from migrate._directives import directives, held_lines
from migrate._index import Index
from migrate.rules._base import Diagnostic, Rule
from migrate.rules._names import exported as exported_names
from migrate.rules._names import is_v1

if TYPE_CHECKING:  # libcst only when a file needs the libcst form
    import libcst as cst
    from libcst.metadata import MetadataWrapper


class UnusedV1Imports(Rule):
    """## What it does
    Removes imports from ``ray.air`` (and its submodules) and from the V1 session modules
    that nothing in the module uses: ``from ray.air import session`` left behind by an
    earlier edit, in any scope, inside ``try:`` / ``if TYPE_CHECKING:`` blocks too. Other
    names of the same import stay; a comment on a removed line is kept on its own line (a
    bare ``# noqa`` directive, which served that line only, goes with it).

    ## Why is this bad?
    The import alone breaks the module the day ``ray.air`` is removed from Ray, although
    nothing uses it.

    ## Example
    ```python
    import os
    from ray.air import session  # legacy


    def cpus():
        return os.cpu_count()
    ```

    ## Use instead
    ```python
    import os
    # legacy


    def cpus():
        return os.cpu_count()
    ```

    ## Fix safety
    Safe, except where an unused import may be a re-export: a package's ``__init__.py`` is left
    alone, as are names listed in ``__all__`` and imports marked ``# noqa: F401`` (pyflakes' and
    ruff's code for an unused import: the project's own word that the import is deliberate) on
    any of their lines. RTM100 flags such an import that stays (it breaks the module the day Ray
    removes what it names).
    """

    code = "RTM006"
    cleanup = True  # again at the end: an import the other rewrites left unused
    name = "unused-v1-import"
    trigger = re.compile(r"\bair\b|session")
    summary = "Remove imports of ray.air / V1 session modules that nothing uses"
    fix_safety = "safe"

    @classmethod
    def could_apply(cls, index: Index) -> bool:
        return bool(_candidates(index))

    @classmethod
    def cleanup_needed(cls, first: Index, current: Index) -> bool:
        """Only when the rewrites left a V1 import unread that was read before them."""
        return bool(_candidates(current) - _candidates(first))

    def fast(self, index: Index) -> str | None:
        """Decided on the index when each V1 import's name is either spelled nowhere else
        (unused) or bound once at module level and read, or named in a string annotation
        (used); removals of single-line ``from`` imports with nothing above them but code.
        libcst for the rest (names also spelled in comments or other strings, rebound names,
        comments or blank lines that would move, blocks that would become empty)."""
        if self.context.path.endswith(("__init__.py", "__init__.pyi")):
            return index.text
        exported = exported_names(index)
        declared = declared_reexports(index)
        annotated: set[str] | None = None
        held: set[int] | None = None  # the lines a noqa directive holds for this rule (as the engine reads them)
        edits = _fast.Edits(index)
        found = []
        for node, parent, functions in index.import_statements:
            unused: list[ast.alias] = []
            for alias, name in _v1_aliases(node):
                if name in exported or name in declared.get(node.lineno, ()):
                    continue
                if _fast.words(index.text, name) == 1:
                    unused.append(alias)
                    continue
                if index.bindings[name] != 1:
                    return None
                if id(node) not in index.module_scope_imports:
                    if _read_within(index, name, functions):
                        continue  # bound only here, read in its function: used
                    return None
                if name in index.loaded:
                    continue  # a global bound only here, read somewhere: this import is used
                if annotated is None:
                    annotated = _annotation_names(index.tree)
                if name not in annotated:
                    return None
            if not unused:
                continue
            names = ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in unused)
            if node.lineno == node.end_lineno and "noqa" in index.line(node.lineno).lower():
                if held is None:
                    held = held_lines(index.text, self.code)
                if node.lineno in held:
                    # what the engine would make of libcst's removal: the line kept, the finding a flag
                    found.append(Diagnostic(self.code, node.lineno, 1, f"unused V1 import removed: `{names}`", False))
                    continue
            if not isinstance(node, ast.ImportFrom) or node.lineno != node.end_lineno:
                return None
            line = _fast.alone(index, node)
            if line is None or not _fast.canonical(index, node):
                return None
            kept = [(a.name, a.asname) for a in node.names if a not in unused]
            if kept:
                edits.replace(node, _fast.from_import(node.module or "", kept))
            elif not _removable(index, node, parent, line):
                return None
            else:
                start = index.offset(node.lineno, 0)
                edits.replace_range(start, line.end, "")
            found.append(Diagnostic(self.code, node.lineno, 1, f"unused V1 import removed: `{names}`", True))
        self.diagnostics += found
        return edits.apply()

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        from migrate.rules._cst import unused_v1_imports

        return unused_v1_imports.apply(self, wrapper, declared_reexports(self.index_of(wrapper)))


def _candidates(index: Index) -> set[tuple[str, str]]:
    """The V1 imports (name, qualified name) that nothing in the module reads."""
    exported = exported_names(index)
    return {(name, q) for name, q in index.imports if is_v1(q) and name not in index.loaded and name not in exported}


def declared_reexports(index: Index) -> dict[int, set[str]]:
    """By an import statement's first line, the names it binds that are marked ``# noqa: F401``
    (pyflakes' and ruff's code for an unused import; with other codes too): deliberate imports,
    which this rule does not remove. A mark on the statement's first line covers all its names,
    one on a name's own line (an import over several lines) that name."""
    found: dict[int, set[str]] | None = index.cache.get("declared_reexports")
    if found is None:
        found = {}
        if "F401" in index.text:
            marked = {n for n, d in directives(index.text).items() if d.codes is not None and "F401" in d.codes}
            for node, _, _ in index.import_statements:
                names = {
                    alias.asname or alias.name.split(".", 1)[0]
                    for alias in node.names
                    if node.lineno in marked or getattr(alias, "lineno", node.lineno) in marked
                }
                if names:
                    found[node.lineno] = names
        index.cache["declared_reexports"] = found
    return found


def _read_within(index: Index, name: str, functions: tuple[str, ...]) -> bool:
    """Whether ``name`` is read inside the function whose enclosing names are ``functions`` (or a
    function nested in it). Functions are told apart by name only: two of one name make this true
    where only one reads it, which keeps an import, never removes a used one."""
    depth = len(functions)
    return any(
        type(item.node) is ast.Name and item.node.id == name and item.functions[:depth] == functions
        for item in index.nodes
    )


def _v1_aliases(node: ast.Import | ast.ImportFrom) -> list[tuple[ast.alias, str]]:
    """(alias, bound name) of the aliases that bind a V1 module's name (as ``_binds_v1``:
    ``import ray.air.x`` binds ``ray``, so only ``import ... as`` counts)."""
    if isinstance(node, ast.Import):
        return [(a, a.asname) for a in node.names if a.asname is not None and is_v1(a.name)]
    if node.level or node.module is None:
        return []
    return [(a, a.asname or a.name) for a in node.names if a.name != "*" and is_v1(f"{node.module}.{a.name}")]


def _annotation_names(tree: ast.Module) -> set[str]:
    """Names read inside string annotations (``x: "DataBatchType"``), which libcst's scope
    analysis counts as uses."""
    names: set[str] = set()
    annotations: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            annotations.append(node.returns)
    for annotation in annotations:
        for inner in ast.walk(annotation):
            if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                try:
                    parsed = ast.parse(inner.value.strip(), mode="eval")
                except SyntaxError:
                    continue
                names.update(n.id for n in ast.walk(parsed) if isinstance(n, ast.Name))
    return names


def _removable(index: Index, node: ast.ImportFrom, parent: ast.AST | None, line: _fast.Line) -> bool:
    """Deleting the statement's line is all libcst's removal does: no comment on it, nothing
    but code directly above (libcst drops a removed statement's blank lines and moves its
    comments), a line break after it, and another statement left in its block."""
    if not line.has_break or "#" in index.line(node.lineno):
        return False
    if node.lineno > 1:
        above = index.line(node.lineno - 1).strip()
        if not above or above.startswith("#"):
            return False
    siblings = [b for b in _blocks(parent if parent is not None else index.tree) if node in b]
    return bool(siblings) and len(siblings[0]) > 1


def _blocks(parent: ast.AST) -> list[list[ast.stmt]]:
    return [getattr(parent, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(parent, f, None), list)]
