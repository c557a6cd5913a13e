"""RTM008: deprecated module paths of Ray Train's trainers become the public ones."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from migrate import _fast
from migrate._index import Index
from migrate.rules._base import Diagnostic, Rule

if TYPE_CHECKING:  # libcst only when a file needs the libcst form
    import libcst as cst
    from libcst.metadata import MetadataWrapper

# Deprecated module -> (public module, the names the public module exports from it).
MOVES: dict[str, tuple[str, frozenset[str]]] = {
    "ray.train.torch.torch_trainer": ("ray.train.torch", frozenset({"TorchTrainer"})),
    "ray.train.torch.config": ("ray.train.torch", frozenset({"TorchConfig"})),
    "ray.train.torch.train_loop_utils": (
        "ray.train.torch",
        frozenset(
            {
                "prepare_model",
                "prepare_data_loader",
                "get_device",
                "get_devices",
                "enable_reproducibility",
                "accelerate",
                "prepare_optimizer",
                "backward",
            }
        ),
    ),  # fmt: skip
    # Not ray.train.data_parallel_trainer: ray.train exports no DataParallelTrainer in any release
    # (the catalogue); RTM128 flags V1's with V2's home.
    "ray.train.xgboost.xgboost_trainer": ("ray.train.xgboost", frozenset({"XGBoostTrainer"})),
    "ray.train.lightgbm.lightgbm_trainer": ("ray.train.lightgbm", frozenset({"LightGBMTrainer"})),
    # V1's failure class by its V1 module: the public name is the failure class of the engine
    # in use (V1's under V1, V2's under V2), so a handler keeps catching (RTM118).
    "ray.train.base_trainer": ("ray.train", frozenset({"TrainingFailedError"})),
    "ray.train.trainer": ("ray.train", frozenset({"TrainingFailedError"})),
}
_MODULE = re.compile(r"from\s+([\w.]+)")


def _movable(node: ast.AST) -> str | None:
    """The public module for a ``from <deprecated> import names`` whose names it all exports."""
    if not isinstance(node, ast.ImportFrom) or node.level or node.module not in MOVES:
        return None
    public, names = MOVES[node.module]
    if all(a.name in names for a in node.names):
        return public
    return None


class DeprecatedModulePaths(Rule):
    """## What it does
    Rewrites imports from the trainers' implementation modules to their public modules:
    ``from ray.train.torch.torch_trainer import TorchTrainer`` becomes ``from ray.train.torch
    import TorchTrainer`` (also ``ray.train.xgboost.xgboost_trainer``, ``ray.train.lightgbm.lightgbm_trainer``,
    ``ray.train.torch.train_loop_utils``, ``ray.train.torch.config``).

    ## Why is this bad?
    Those modules hold V1's classes whatever ``RAY_TRAIN_V2_ENABLED`` says: with V2 on, the
    public module gives V2's trainer, the implementation module still V1's, which V2 rejects.

    ## Example
    ```python
    from ray.train.torch.torch_trainer import TorchTrainer

    trainer = TorchTrainer(train_func)
    ```

    ## Use instead
    ```python
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_func)
    ```

    ## Fix safety
    Safe: the public module exports the same names; an import of any other name from those
    modules is left as it is. ``from ray.train.base_trainer import TrainingFailedError``
    becomes ``from ray.train import TrainingFailedError``: the public name is the failure
    class of the engine in use, so an ``except`` around ``fit()`` keeps catching under V2
    (RTM118 flags the spellings this cannot rewrite).
    """

    code = "RTM008"
    name = "deprecated-module-path"
    trigger = re.compile(
        r"torch_trainer|data_parallel_trainer|xgboost_trainer|lightgbm_trainer|train_loop_utils|torch\.config"
        r"|base_trainer|train\.trainer"
    )
    summary = "Import trainers from their public modules (ray.train.torch, not ray.train.torch.torch_trainer)"
    fix_safety = "safe"

    @classmethod
    def could_apply(cls, index: Index) -> bool:
        return any(_movable(node) for node, _, _ in index.import_statements)

    def fast(self, index: Index) -> str | None:
        edits = _fast.Edits(index)
        for node, _, _ in index.import_statements:
            public = _movable(node)
            if public is None or not isinstance(node, ast.ImportFrom):
                continue
            start = index.offset(node.lineno, node.col_offset)
            match = _MODULE.match(index.text, start)
            if match is None or match.group(1) != getattr(node, "module", None):
                return None  # a line continuation between `from` and the module: libcst's form
            edits.replace_range(match.start(1), match.end(1), public)
            self.diagnostics.append(self._found(node.lineno, node.col_offset + 1, node.module or "", public))
        return edits.apply()

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        import libcst as cst
        from libcst.helpers import get_full_name_for_node
        from libcst.metadata import PositionProvider

        rule = self

        class Move(cst.CSTTransformer):
            METADATA_DEPENDENCIES = (PositionProvider,)

            def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
                module = get_full_name_for_node(original.module) if original.module else None
                if original.relative or module not in MOVES or isinstance(original.names, cst.ImportStar):
                    return updated
                public, names = MOVES[module]
                if not all(get_full_name_for_node(a.name) in names for a in original.names):
                    return updated
                position = self.get_metadata(PositionProvider, original).start
                rule.diagnostics.append(rule._found(position.line, position.column + 1, module, public))
                return updated.with_changes(module=cst.parse_expression(public))

        return wrapper.visit(Move())

    def _found(self, line: int, col: int, old: str, new: str) -> Diagnostic:
        return Diagnostic(self.code, line, col, f"`{old}` -> `{new}`", True)
