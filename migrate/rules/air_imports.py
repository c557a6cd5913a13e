"""RTM001: ``ray.air`` config, checkpoint and result names move to ``ray.train``."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from migrate import _fast, _imports
from migrate._index import Index
from migrate.rules._base import Diagnostic, Rule
from migrate.rules._names import STRING_PATH, air_name
from migrate.tables import AIR_MODULES, AIR_TO_TRAIN

if TYPE_CHECKING:  # libcst only when a file needs the libcst form
    import libcst as cst
    from libcst.metadata import MetadataWrapper


class AirImports(Rule):
    """## What it does
    Moves ``ScalingConfig``, ``RunConfig``, ``CheckpointConfig``, ``FailureConfig``,
    ``Checkpoint`` and ``Result`` from ``ray.air``, ``ray.air.config``,
    ``ray.air.checkpoint`` and ``ray.air.result`` to ``ray.train``, in ``from`` imports
    (aliases kept) and in attribute style (``air.RunConfig``, ``ray.air.RunConfig``).
    The old import is removed once nothing uses it.

    ## Why is this bad?
    ``ray.air`` is the pre-2.7 home of these classes. Under Ray Train V2 its config
    objects are rejected (``Invalid RunConfig type``).

    ## Example
    ```python
    from ray.air.config import ScalingConfig, RunConfig as RC

    scaling = ScalingConfig(num_workers=2)
    ```

    ## Use instead
    ```python
    from ray.train import ScalingConfig, RunConfig as RC

    scaling = ScalingConfig(num_workers=2)
    ```

    ## Fix safety
    Safe: the ``ray.train`` names are the same classes under V1 and V2's equivalents
    under V2; only the import path changes.
    """

    code = "RTM001"
    name = "air-imports"
    trigger = re.compile(r"\bair\b")
    summary = "Import ray.air config, checkpoint and result classes from ray.train"
    fix_safety = "safe"

    @classmethod
    def could_apply(cls, index: Index) -> bool:
        return _imports.member(index.names, AIR_MODULES, AIR_TO_TRAIN) is not None or bool(
            STRING_PATH.search(index.text)
        )

    def fast(self, index: Index) -> str | None:
        """Moves of ``from ray.air... import`` statements, each alone on its line; libcst
        for attribute uses, imports of the air module itself and string annotations."""
        if STRING_PATH.search(index.text):
            return None
        moves: list[tuple[ast.ImportFrom, _fast.Line]] = []
        for node, _, _ in index.import_statements:
            if _fast.binds_module(node, "ray.air"):
                return None
            if not isinstance(node, ast.ImportFrom) or node.level or node.module not in AIR_MODULES:
                continue
            if not any(a.name in AIR_TO_TRAIN for a in node.names):
                continue
            line = _fast.alone(index, node)
            if line is None or not _fast.canonical(index, node):
                return None
            moves.append((node, line))
        if any(type(i.node) is ast.Attribute and air_name(set(index.qualified(i.node))) for i in index.nodes):
            return None
        edits = _fast.Edits(index)
        found = []
        for node, line in moves:
            kept = [(a.name, a.asname) for a in node.names if a.name not in AIR_TO_TRAIN]
            moved = [
                (AIR_TO_TRAIN[a.name], a.asname or (a.name if AIR_TO_TRAIN[a.name] != a.name else None))
                for a in node.names
                if a.name in AIR_TO_TRAIN
            ]
            start = index.offset(node.lineno, node.col_offset)
            parenthesized = index.text.startswith(f"from {node.module} import (", start)
            if kept and parenthesized:
                return None  # libcst keeps the parentheses and their line breaks on what moves
            if parenthesized:  # every name moves, under its own name: the layout stays, as libcst keeps it
                module_start = start + len("from ")
                edits.replace_range(module_start, module_start + len(node.module or ""), "ray.train")
            else:
                edits.replace(node, _fast.from_import("ray.train", moved))
            if kept:  # the moved names keep the line (and its comment); the rest go below
                edits.add_line_after(line, line.indent + _fast.from_import(node.module or "", kept))
            line_number, column = index.position(node)
            message = f"import from `{node.module}` -> `ray.train`"
            found.append(Diagnostic(self.code, line_number, column, message, True))
        self.diagnostics += found
        return edits.apply()

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        from migrate.rules._cst import air_imports

        return air_imports.apply(self, wrapper)
