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
        # A call written one argument per line stays so: each metric keeps its line, its comma
        # and the comment after it, and the dict opens where the call did.
        multiline = _breaks(updated_node.whitespace_before_args) or any(_breaks(a.comma) for a in metrics)
        elements: list[cst.BaseDictElement] = [
            cst.StarredDictElement(value=a.value, comma=a.comma if multiline else cst.MaybeSentinel.DEFAULT)
            if a.star == "**"
            else cst.DictElement(
                key=cst.SimpleString(f'"{a.keyword.value}"'),  # type: ignore[union-attr]
                value=a.value,
                comma=a.comma if multiline else cst.MaybeSentinel.DEFAULT,
            )
            for a in metrics
        ]
        rest = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args if not is_metric(a)]
        self.report(original_node, "metrics as keywords -> one dict", fixed=True)
        if not multiline:
            return updated_node.with_changes(args=[cst.Arg(value=cst.Dict(elements)), *rest])
        if rest and not any(
            isinstance(a.comma, cst.Comma) and "#" in cst.Module([]).code_for_node(a.comma) for a in metrics
        ):
            # `report(\n    loss=l,\n    checkpoint=c,\n)`: the metrics' dict takes their place as
            # one line, the other arguments keep theirs
            compact = [e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in elements]
            kept = [a for a in args if not is_metric(a)]
            return updated_node.with_changes(args=[cst.Arg(value=cst.Dict(compact), comma=metrics[-1].comma), *kept])
        if not _breaks(updated_node.whitespace_before_args):  # a hanging indent under the first metric:
            elements = [_shifted(e) for e in elements]  # the `{` moved it one column right
        opening = cst.LeftCurlyBrace(whitespace_after=updated_node.whitespace_before_args)
        last = elements[-1]
        if isinstance(last.comma, cst.Comma) and not _breaks(last.comma) and rest:
            elements[-1] = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)  # `, checkpoint=c` follows
        metrics_arg = cst.Arg(value=cst.Dict(elements, lbrace=opening))
        if rest:
            metrics_arg = metrics_arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return updated_node.with_changes(whitespace_before_args=cst.SimpleWhitespace(""), args=[metrics_arg, *rest])


def _shifted(element: cst.BaseDictElement) -> cst.BaseDictElement:
    """``element`` with the line after its comma indented one column more."""
    comma = element.comma
    if not isinstance(comma, cst.Comma) or not isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        return element
    after = comma.whitespace_after
    last = after.last_line.with_changes(value=after.last_line.value + " ")
    return element.with_changes(comma=comma.with_changes(whitespace_after=after.with_changes(last_line=last)))


def _breaks(node: object) -> bool:
    """Whether ``node`` (whitespace, or a comma and its whitespace) holds a line break."""
    return isinstance(node, (cst.Comma, cst.ParenthesizedWhitespace, cst.SimpleWhitespace)) and "\n" in (
        cst.Module([]).code_for_node(node)
    )
