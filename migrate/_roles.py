"""Which functions of a module are Tune function trainables and which are Train loops.

A session call means ``ray.train.report`` inside a Train loop (a function handed to a
Trainer) but ``ray.tune.report`` inside a Tune *function trainable* (a function handed to
``tune.Tuner``, ``tune.run`` or ``Tuner.restore``, directly, through
``tune.with_parameters`` / ``tune.with_resources`` / ``functools.partial``, or through a
module-level name bound to such an expression). Under V2, ``ray.train.report`` inside a
Tune function raises. The role is read from this module alone; a function it does not
hand to either is *undecided*.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the index asks for the roles (Index.roles): only a type here
    from migrate._index import Index

TUNE_RUNNERS = frozenset(
    {"ray.tune.Tuner", "ray.tune.tuner.Tuner", "ray.tune.run", "ray.tune.tune.run", "ray.tune.run_experiments"}
)
TUNE_RESTORE = frozenset({"ray.tune.Tuner.restore", "ray.tune.tuner.Tuner.restore"})
WRAPPERS = frozenset(
    {
        "ray.tune.with_parameters",
        "ray.tune.with_resources",
        "ray.tune.trainable.util.with_parameters",
        "ray.tune.trainable.util.with_resources",
        "ray.tune.trainable.with_parameters",
        "functools.partial",
    }
)


@dataclass(frozen=True)
class Roles:
    tune: frozenset[str]  # names of functions run by Tune as function trainables
    train: frozenset[str]  # names of functions run by a Trainer as the training loop
    uses_tune: bool  # the module refers to ray.tune at all

    def of(self, enclosing: Sequence[str]) -> str | None:
        """``"tune"``, ``"train"`` or None (undecided) for code inside ``enclosing`` functions."""
        for name in reversed(enclosing):  # the innermost function with a known role decides
            if name in self.tune:
                return "tune"
            if name in self.train:
                return "train"
        return None


def is_trainer(names: Iterable[str]) -> bool:
    """``names`` include a Ray Train or compat Trainer class."""
    return any(n.startswith(("ray.train.", "compat.")) and n.endswith("Trainer") for n in names)


def resolve(index: Index, expression: ast.expr | None, seen: frozenset[str] = frozenset()) -> ast.expr | None:
    """``expression``, or the value a module-level name is bound to (followed through names)."""
    while isinstance(expression, ast.Name) and expression.id in index.assignments and expression.id not in seen:
        seen = seen | {expression.id}
        expression = index.assignments[expression.id]
    return expression


def roles_of(index: Index) -> Roles:
    """The file's roles, worked out once per index (kept in ``index.cache``)."""
    found: Roles | None = index.cache.get("roles")
    if found is None:
        found = index.cache["roles"] = roles(index)
    return found


def roles(index: Index) -> Roles:
    assignments = index.assignments

    def functions(expression: ast.expr | None, seen: frozenset[str] = frozenset()) -> set[str]:
        """Names of the module's functions that ``expression`` hands over."""
        if isinstance(expression, ast.Name):
            if expression.id in assignments and expression.id not in seen:
                return functions(assignments[expression.id], seen | {expression.id}) or {expression.id}
            return {expression.id}
        if isinstance(expression, ast.Call) and index.qualified(expression.func) & WRAPPERS and expression.args:
            return functions(expression.args[0], seen)
        return set()

    tune: set[str] = set()
    train: set[str] = set()
    for item in index.nodes:
        node = item.node
        if not isinstance(node, ast.Call):
            continue
        names = index.qualified(node.func)
        if names & TUNE_RUNNERS:
            tune |= functions(argument(node, 0, "trainable", "run_or_experiment"))
        elif names & TUNE_RESTORE:
            tune |= functions(argument(node, 1, "trainable"))
        elif is_trainer(names):
            train |= functions(argument(node, 0, "train_loop_per_worker"))
    uses_tune = any(n == "ray.tune" or n.startswith("ray.tune.") for n in index.names)
    return Roles(frozenset(tune - train), frozenset(train - tune), uses_tune)


def argument(call: ast.Call, position: int, *keywords: str) -> ast.expr | None:
    """The argument passed by one of ``keywords``, else the ``position``-th positional one."""
    for keyword in call.keywords:
        if keyword.arg in keywords:
            return keyword.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    return positional[position] if len(positional) > position else None


TUNERS = frozenset({"ray.tune.Tuner", "ray.tune.tuner.Tuner"})


class TuneResults:
    """Which expressions of a module are results of a Tune ``ResultGrid``: Tune keeps every
    report's row and its auto-filled keys (``training_iteration``, ...) there under V1 and V2
    alike, so what V2 changes for a Trainer's ``Result`` does not apply to them.

    Read from names, as a reader would: ``grid = tuner.fit()`` (``tuner`` a ``Tuner(...)`` or
    ``Tuner.restore(...)``; also ``tuner.get_results()``), then ``grid[i]``,
    ``grid.get_best_result(...)``, ``for r in grid`` and names bound to those. A name counts
    only when every binding of it in the module is such a value."""

    def __init__(self, index: Index) -> None:
        self._index = index
        bindings: dict[str, list[ast.expr | None]] = {}
        for node in ast.walk(index.tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bindings.setdefault(target.id, []).append(node.value)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
                bindings.setdefault(node.target.id, []).append(node.value if isinstance(node, ast.AnnAssign) else None)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name):
                bindings.setdefault(node.target.id, []).append(ast.Subscript(node.iter, ast.Constant(0)))
        self._bindings = bindings
        self._tuners: set[str] = set()
        self._grids: set[str] = set()
        self._results: set[str] = set()
        for names, test in ((self._tuners, self._is_tuner), (self._grids, self._is_grid), (self._results, self.holds)):
            self._fill(names, test)

    def _fill(self, names: set[str], test: Callable[[ast.expr], bool]) -> None:
        """Add every name whose bindings all pass ``test`` (which may consult ``names``)."""
        changed = True
        while changed:
            changed = False
            for name, values in self._bindings.items():
                if name not in names and all(v is not None and test(v) for v in values):
                    names.add(name)
                    changed = True

    def _is_tuner(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self._tuners
        return isinstance(node, ast.Call) and bool(self._index.qualified(node.func) & (TUNERS | TUNE_RESTORE))

    def _is_grid(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self._grids
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
            return node.func.attr in ("fit", "get_results") and self._is_tuner(node.func.value)
        return False

    def holds(self, node: ast.expr) -> bool:
        """``node`` is a Tune result (a ``ray.tune.Result`` of a ``ResultGrid``)."""
        if isinstance(node, ast.Name):
            return node.id in self._results
        if isinstance(node, ast.Subscript):
            return self._is_grid(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return node.func.attr == "get_best_result" and self._is_grid(node.func.value)
        return False
