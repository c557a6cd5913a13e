"""The libcst form of :mod:`migrate.rules.report_checkpoint_keyword` (imported when a file needs it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from migrate.rules._cst import RuleVisitor, qualified
from migrate.rules._names import is_any_report

if TYPE_CHECKING:  # a form needs only what every rule has: no import of its rule module
    from migrate.rules._base import Rule


def apply(rule: Rule, wrapper: MetadataWrapper) -> cst.Module:
    return wrapper.visit(_Rewrite(rule))


class _Rewrite(RuleVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if not is_any_report(qualified(self, original_node.func)):
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
