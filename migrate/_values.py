"""What a name holds, read as a reader of one module reads it: every value bound to it, in any
scope (``trainer = TorchTrainer(...)`` inside ``main()``, ``cb = MLflowLoggerCallback(...)`` at
module level), so a rule judges a value passed on by a name as it judges it written inline.

A name is judged by *all* its bindings in the module (as :class:`migrate._roles.TuneResults`
does): a name bound to a trainer in one function and to something else in another is neither.
Parameters and loop targets count as bindings of unknown value.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from migrate._index import Index

_UNKNOWN = ast.Constant(value=Ellipsis)  # a binding whose value the module does not show


class Values:
    def __init__(self, tree: ast.Module) -> None:
        bound: dict[str, list[ast.expr]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound.setdefault(target.id, []).append(node.value)
                    else:
                        for name in ast.walk(target):
                            if isinstance(name, ast.Name):
                                bound.setdefault(name.id, []).append(_UNKNOWN)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                bound.setdefault(node.target.id, []).append(node.value or _UNKNOWN)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension)):
                for name in ast.walk(node.target):
                    if isinstance(name, ast.Name):
                        bound.setdefault(name.id, []).append(_UNKNOWN)
            elif isinstance(node, ast.NamedExpr):
                bound.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, ast.arg):
                bound.setdefault(node.arg, []).append(_UNKNOWN)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if isinstance(item.optional_vars, ast.Name):
                        bound.setdefault(item.optional_vars.id, []).append(_UNKNOWN)
        self._bound = bound

    def of(self, expression: ast.expr, seen: frozenset[str] = frozenset()) -> list[ast.expr]:
        """The expressions ``expression`` may hold: itself, or every value bound to the name
        (followed through names); ``[]`` for a name the module binds nowhere it can see."""
        if not isinstance(expression, ast.Name):
            return [expression]
        if expression.id in seen:
            return []
        values = self._bound.get(expression.id)
        if values is None:
            return []
        out: list[ast.expr] = []
        for value in values:
            out += self.of(value, seen | {expression.id})
        return out

    def always(self, expression: ast.expr, test: Callable[[ast.expr], bool]) -> bool:
        """Every value ``expression`` may hold passes ``test`` (and there is one)."""
        values = self.of(expression)
        return bool(values) and all(v is not _UNKNOWN and test(v) for v in values)


def values_of(index: Index) -> Values:
    """The module's :class:`Values`, made once per index."""
    found: Values | None = index.cache.get("values")
    if found is None:
        found = index.cache["values"] = Values(index.tree)
    return found
