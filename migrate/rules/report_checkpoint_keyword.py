"""RTM003: pass ``report``'s checkpoint by keyword."""

from __future__ import annotations

import ast
import re

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from migrate._index import Index
from migrate.rules._base import Rule, RuleVisitor
from migrate.rules._flags import is_report, qualified


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
            isinstance(item.node, ast.Call) and len(item.node.args) >= 2 and _is_report(index.qualified(item.node.func))
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
        return wrapper.visit(_Rewrite(self))


class _Rewrite(RuleVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if not _is_report(qualified(self, original_node.func)):
            return updated_node
        positional = [i for i, a in enumerate(updated_node.args) if a.keyword is None and a.star == ""]
        if len(positional) < 2 or any(a.star for a in updated_node.args):
            return updated_node
        index = positional[1]
        args = list(updated_node.args)
        args[index] = args[index].with_changes(
            keyword=cst.Name("checkpoint"),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
            ),
        )
        self.report(original_node, "positional checkpoint -> `checkpoint=`", fixed=True)
        return updated_node.with_changes(args=args)


def _is_report(names: set[str] | frozenset[str]) -> bool:
    """Ray Train's report, and Ray Tune's (whose checkpoint is keyword-only)."""
    return is_report(names) or "ray.tune.report" in names


def _named_report(index: Index, func: ast.expr) -> bool:
    """``func`` is spelled ``report``/``x.report``, or is bound to an imported ``report``."""
    if isinstance(func, ast.Attribute):
        return func.attr == "report"
    if isinstance(func, ast.Name):
        return func.id == "report" or any(n.endswith(".report") for n in index.qualified(func))
    return False
