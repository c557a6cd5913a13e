"""Which functions of a module are Tune function trainables and which are Train loops.

A session call means ``ray.train.report`` inside a Train loop (a function handed to a
Trainer) but ``ray.tune.report`` inside a Tune *function trainable* (a function handed to
``tune.Tuner``, ``tune.run`` or ``Tuner.restore``, directly, through
``tune.with_parameters`` / ``tune.with_resources`` / ``functools.partial``, or through a
module-level name bound to such an expression, or through a function of the module that
hands its parameter on). Under V2, ``ray.train.report`` inside a Tune function raises. A
function the module's own functions of a role call (by name) runs in that role too, unless
both roles call it. The role is read from this module and from what other modules of the
tree hand its functions to (``Index.given_roles``: the command line's tree pass); a function
neither hands to either is *undecided*.
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
    # Names of functions run by Tune as function trainables (``module.function`` for one named
    # through a module the file imports whole, which migrate.tree hands to that module) ...
    tune: frozenset[str]
    train: frozenset[str]  # ... and by a Trainer as the training loop
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


def _functions(index: Index, expression: ast.expr | None, seen: frozenset[str] = frozenset()) -> set[str]:
    """Names of the module's functions that ``expression`` hands over. (A module-level function,
    not a closure in :func:`roles`: a recursive closure is a reference cycle, which would keep the
    file's whole tree alive until the garbage collector runs; engine.process_file pauses it.)"""
    if isinstance(expression, ast.Name):
        assignments = index.assignments
        if expression.id in assignments and expression.id not in seen:
            return _functions(index, assignments[expression.id], seen | {expression.id}) or {expression.id}
        return {expression.id}
    if isinstance(expression, ast.Attribute):  # `training.objective`: a function of a module imported whole
        dotted = _dotted(expression)
        return {dotted} if dotted else set()
    if isinstance(expression, ast.Call) and index.qualified(expression.func) & WRAPPERS and expression.args:
        return _functions(index, expression.args[0], seen)
    return set()


def _dotted(expression: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(expression, ast.Attribute):
        parts.append(expression.attr)
        expression = expression.value
    return ".".join([expression.id, *reversed(parts)]) if isinstance(expression, ast.Name) else None


def roles(index: Index) -> Roles:
    defined = {
        s.name: s for s in index.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
    }  # the module's own functions, which its calls by bare name reach

    handed: list[tuple[set[str], str, tuple[str, ...]]] = []  # (functions, role, where handed)
    calls: list[tuple[tuple[str, ...], ast.Call]] = []  # calls of the module's own functions, where made
    for item in index.nodes:
        node = item.node
        if not isinstance(node, ast.Call):
            continue
        names = index.qualified(node.func)
        if names & TUNE_RUNNERS:
            trainable = argument(node, 0, "trainable", "run_or_experiment")
            handed.append((_functions(index, trainable), "tune", item.functions))
        elif names & TUNE_RESTORE:
            handed.append((_functions(index, argument(node, 1, "trainable")), "tune", item.functions))
        elif is_trainer(names):
            handed.append((_functions(index, argument(node, 0, "train_loop_per_worker")), "train", item.functions))
        elif isinstance(node.func, ast.Name) and node.func.id in defined and not names:
            calls.append((item.functions, node))
    # A function of the module that hands one of its parameters on (a project's own Tuner
    # wrapper: ``def sweep(fn): tune.Tuner(fn, ...)``) hands on what its callers give it.
    wrappers: dict[str, dict[int, tuple[str, str]]] = {}
    tune: set[str] = set()
    train: set[str] = set()
    of_role = {"tune": tune, "train": train}
    for found, role, where in handed:
        definition = defined.get(where[0]) if len(where) == 1 else None
        parameters = [a.arg for a in (*definition.args.posonlyargs, *definition.args.args)] if definition else []
        for name in found:
            if name in parameters and name not in defined:
                wrappers.setdefault(where[0], {})[parameters.index(name)] = (name, role)
            else:
                of_role[role].add(name)
    for _, call in calls:
        for position, (parameter, role) in wrappers.get(call.func.id, {}).items():  # type: ignore[attr-defined]
            of_role[role].update(_functions(index, argument(call, position, parameter)))
    for name, role in index.given_roles:  # what other modules of the tree hand this module's functions to
        of_role[role].add(name)
    both = tune & train  # handed to both: undecided
    tune -= both
    train -= both
    # What a function of a known role calls of the module's own functions runs in that role too
    # (a Tune trainable's helper that reports), unless it is reached from both or has its own.
    given = tune | train | both
    reached: dict[str, set[str]] = {}
    changed = True
    while changed:
        known = Roles(frozenset(tune), frozenset(train), False)
        reached = {}
        for enclosing, call in calls:
            caller = known.of(enclosing)
            if caller is not None:
                reached.setdefault(call.func.id, set()).add(caller)  # type: ignore[attr-defined]
        changed = False
        for callee, found in reached.items():
            if callee not in given and callee not in tune and callee not in train and len(found) == 1:
                of_role[next(iter(found))].add(callee)
                changed = True
    undecided = {callee for callee, found in reached.items() if len(found) > 1 and callee not in given}
    tune -= undecided
    train -= undecided
    uses_tune = (
        bool(tune)
        or any(role == "tune" for _, role in index.given_roles)  # Tune runs some of its functions
        or any(n == "ray.tune" or n.startswith("ray.tune.") for n in index.names)
    )
    return Roles(frozenset(tune), frozenset(train), uses_tune)


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
