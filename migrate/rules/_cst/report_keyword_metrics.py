"""The libcst form of :mod:`migrate.rules.report_keyword_metrics` (imported when a file needs it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from migrate.rules._cst import RuleVisitor, qualified
from migrate.rules._names import REPORT_KEYWORDS, is_any_report

if TYPE_CHECKING:  # a form needs only what every rule has: no import of its rule module
    from migrate.rules._base import Rule


def apply(rule: Rule, wrapper: MetadataWrapper) -> cst.Module:
    return wrapper.visit(_Rewrite(rule))


class _Rewrite(RuleVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if not is_any_report(qualified(self, original_node.func)):
            return updated_node
        args = list(updated_node.args)
        if any(a.keyword is None and a.star in ("", "*") for a in args):
            return updated_node  # a positional argument (the metrics dict), or *args: not the keyword form
        if any(a.keyword is not None and a.keyword.value == "metrics" for a in args):
            return updated_node

        def is_metric(a: cst.Arg) -> bool:
            return a.star == "**" or (a.keyword is not None and a.keyword.value not in REPORT_KEYWORDS)

        metrics = [a for a in args if is_metric(a)]
        if not metrics:
            return updated_node
        elements: list[cst.BaseDictElement] = [
            cst.StarredDictElement(value=a.value)
            if a.star == "**"
            else cst.DictElement(key=cst.SimpleString(f'"{a.keyword.value}"'), value=a.value)  # type: ignore[union-attr]
            for a in metrics
        ]
        rest = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args if not is_metric(a)]
        self.report(original_node, "metrics as keywords -> one dict", fixed=True)
        return updated_node.with_changes(args=[cst.Arg(value=cst.Dict(elements)), *rest])
