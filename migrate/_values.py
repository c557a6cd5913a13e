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

UNKNOWN = ast.Constant(value=Ellipsis)  # a binding whose value the module does not show


class Values:
    def __init__(self, tree: ast.Module) -> None:
        # Statements only (expressions are most of a tree's nodes, and bind nothing that leaves
        # them but a walrus, which this reader does not follow: a name bound only so is unknown).
        bound: dict[str, list[ast.expr]] = {}

        def unknown(target: ast.AST) -> None:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    bound.setdefault(name.id, []).append(UNKNOWN)

        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound.setdefault(target.id, []).append(node.value)
                    else:
                        unknown(target)
            elif isinstance(node, ast.AnnAssign):
                if isinstance(node.target, ast.Name):
                    bound.setdefault(node.target.id, []).append(node.value or UNKNOWN)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
                unknown(node.target)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        unknown(item.optional_vars)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                arguments = node.args
                named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                for arg in [*named, arguments.vararg, arguments.kwarg]:
                    if arg is not None:
                        bound.setdefault(arg.arg, []).append(UNKNOWN)
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    stack.extend(c for c in children if isinstance(c, (ast.stmt, ast.excepthandler, ast.match_case)))
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
        return bool(values) and all(v is not UNKNOWN and test(v) for v in values)


def values_of(index: Index) -> Values:
    """The module's :class:`Values`, made once per index."""
    found: Values | None = index.cache.get("values")
    if found is None:
        found = index.cache["values"] = Values(index.tree)
    return found
