"""Import planning shared by the fast forms and the libcst forms of the rewriting rules
(their libcst helpers are in :mod:`migrate.rules._cst.imports`)."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Mapping


def member(qualified: set[str], modules: tuple[str, ...], names: Mapping[str, str]) -> str | None:
    """The name ``n`` when some ``<module>.<n>`` in ``qualified`` has a module and a name listed."""
    for q in qualified:
        module, _, name = q.rpartition(".")
        if module in modules and name in names:
            return name
    return None


def choose_alias(used: set[str], counts: Counter[str], submodule: str = "train") -> str:
    """The first of ``train``, ``ray_train``, ``ray_train_api``, ``ray_train_2``, ... that the module does not use."""
    for candidate in (submodule, f"ray_{submodule}", f"ray_{submodule}_api"):
        if candidate not in used and counts[candidate] == 0:
            return candidate
    index = 2
    while f"ray_{submodule}_{index}" in used:
        index += 1
    return f"ray_{submodule}_{index}"


def exported(tree: ast.Module, text: str) -> set[str]:
    """Every string of a module that mentions ``__all__`` (wider than ``__all__`` itself, on
    purpose: an ``__all__`` built from pieces, or appended to, still keeps its names): an import
    such a string names is a re-export, never removed."""
    if "__all__" not in text:
        return set()
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
