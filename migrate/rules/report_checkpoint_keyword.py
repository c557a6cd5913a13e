"""RTM003: pass ``report``'s checkpoint by keyword."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from migrate._index import Index
from migrate.rules._base import Rule
from migrate.rules._names import is_any_report

if TYPE_CHECKING:  # libcst only when a file needs the libcst form
    import libcst as cst
    from libcst.metadata import MetadataWrapper


class ReportCheckpointKeyword(Rule):
    """## What it does
    Turns a positional checkpoint, ``train.report(metrics, ckpt)``, into
    ``train.report(metrics, checkpoint=ckpt)``.

    ## Why is this bad?
    V1's ``report`` takes ``checkpoint`` keyword-only and raises ``TypeError`` on the
    positional form V2 accepts; the keyword works in both.

    ## Example
    ```python
    from ray import train


    def train_func(config):
        train.report({"loss": 0.1}, ckpt)
    ```

    ## Use instead
    ```python
    from ray import train


    def train_func(config):
        train.report({"loss": 0.1}, checkpoint=ckpt)
    ```

    ## Fix safety
    Safe: the second parameter of ``report`` is the checkpoint in every version.
    """

    code = "RTM003"
    name = "report-checkpoint-keyword"
    trigger = re.compile(r"report")
    summary = "Pass report()'s checkpoint by keyword (V1 requires it)"
    fix_safety = "safe"

    @classmethod
    def could_apply(cls, index: Index) -> bool:
        return any(
            isinstance(item.node, ast.Call)
            and len(item.node.args) >= 2
            and is_any_report(index.qualified(item.node.func))
            for item in index.nodes
        )

    @classmethod
    def may_apply_after_rewrites(cls, first: Index) -> bool:
        # The rules before this one move report's import (ray.air.session -> ray.train or
        # ray.tune) and rename its callee (session.report -> train.report; an alias keeps
        # its name); none adds an argument. So a report call with two positional arguments
        # after them is a call with two already, named `report` or imported as `report`.
        return any(
            isinstance(item.node, ast.Call) and len(item.node.args) >= 2 and _named_report(first, item.node.func)
            for item in first.nodes
        )

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        from migrate.rules._cst import report_checkpoint_keyword

        return report_checkpoint_keyword.apply(self, wrapper)


def _named_report(index: Index, func: ast.expr) -> bool:
    """``func`` is spelled ``report``/``x.report``, or is bound to an imported ``report``."""
    if isinstance(func, ast.Attribute):
        return func.attr == "report"
    if isinstance(func, ast.Name):
        return func.id == "report" or any(n.endswith(".report") for n in index.qualified(func))
    return False
