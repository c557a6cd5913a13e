"""Which functions of a module other modules of the tree hand to Tune or a Trainer.

A session call's right replacement depends on who runs its function (:mod:`migrate._roles`),
and a package often defines its trainable in one module and runs it from another
(``training.py`` with ``session.report``; ``main.py``: ``from pkg.training import objective;
tune.run(objective)``). Each file's run records what it imports and hands over
(:func:`handoffs`); the command line then gives each defining module those roles
(:func:`given_roles`) and runs again only the files they concern, before anything is written.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from migrate._index import Index
from migrate._roles import roles_of

# A file can hand a function to Tune or a Trainer only where it names one of them.
_RUNS_SOMETHING = re.compile(r"Tuner|tune\.run|run_experiments|Trainer\b")


class Handoff(NamedTuple):
    """``from <module> import <name>`` (``level`` dots before it), handed to ``role``."""

    module: str
    level: int
    name: str
    role: str  # "tune" | "train"


def handoffs(index: Index) -> list[Handoff]:
    """The functions this module imports from other modules of its project and hands to Tune or a
    Trainer (directly, through ``tune.with_parameters``/``functools.partial``, or through one of
    its own functions that hands its parameter on): imported by name (``from pkg.training import
    objective``) or named through a module imported whole (``import pkg.training as t`` ...
    ``t.objective``; ``from pkg import training`` ... ``training.objective``)."""
    if not _RUNS_SOMETHING.search(index.text):
        return []
    roles = roles_of(index)
    if not roles.tune and not roles.train:
        return []
    functions: dict[str, tuple[str, int, str]] = {}  # bound name: (module, level, function)
    modules: dict[str, tuple[str, int]] = {}  # bound name: (module, level), for `module.function`
    # A script's imports inside `main()` too; one at module level wins a name both bind.
    statements = sorted(index.import_statements, key=lambda found: not found[2])
    for statement, _, _ in statements:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name.split(".")[0] not in ("ray", "compat"):
                    bound = alias.asname or alias.name.split(".")[0]
                    modules[bound] = (alias.name if alias.asname else bound, 0)
        elif (statement.module or statement.level) and (statement.module or "").split(".")[0] not in ("ray", "compat"):
            for alias in statement.names:
                bound = alias.asname or alias.name
                functions[bound] = (statement.module or "", statement.level, alias.name)
                modules[bound] = (
                    f"{statement.module}.{alias.name}" if statement.module else alias.name,
                    statement.level,
                )
    found = []
    for role, names in (("tune", roles.tune), ("train", roles.train)):
        for name in sorted(names):
            if name in functions:  # `from pkg.training import objective`
                found.append(Handoff(*functions[name], role))
            elif "." in name:  # `import pkg.training as t` ... `t.objective`
                root, _, rest = name.partition(".")
                if root in modules:
                    module, level = modules[root]
                    inner, _, function = rest.rpartition(".")
                    found.append(Handoff(f"{module}.{inner}" if inner else module, level, function, role))
    return found


def given_roles(
    results: Iterable[tuple[str, Sequence[Handoff]]], paths: Iterable[str]
) -> dict[str, tuple[tuple[str, str], ...]]:
    """For each of ``paths`` that some file's handoffs name: (function, role) pairs, sorted.
    ``results``: (importing file, its handoffs). An absolute module is found by its path's tail
    (``pkg/training.py`` or ``pkg/training/__init__.py`` anywhere in the tree); a relative one
    beside the importing file."""
    results = list(results)
    if not results:
        return {}  # the common case: the tree's index of paths is not needed
    by_tail: dict[str, list[str]] = {}
    for path in paths:
        normal = os.path.normpath(path)
        parts = normal[: -len(".py")].split(os.sep) if normal.endswith(".py") else None
        if not parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        for start in range(len(parts)):
            by_tail.setdefault(".".join(parts[start:]), []).append(normal)
    known = {path for paths in by_tail.values() for path in paths}
    given: dict[str, set[tuple[str, str]]] = {}
    for importer, found in results:
        for handoff in found:
            if handoff.level:
                base = os.path.dirname(os.path.normpath(importer))
                for _ in range(handoff.level - 1):
                    base = os.path.dirname(base)
                stem = os.path.join(base, *handoff.module.split(".")) if handoff.module else base
                targets = [t for t in (stem + ".py", os.path.join(stem, "__init__.py")) if t in known]
            else:
                targets = by_tail.get(handoff.module, [])
            for target in targets:
                given.setdefault(target, set()).add((handoff.name, handoff.role))
    return {path: tuple(sorted(pairs)) for path, pairs in given.items()}
