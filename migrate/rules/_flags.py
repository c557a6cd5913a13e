"""Shared machinery of the flag-only rules: match calls and attributes by qualified name."""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, QualifiedNameProvider

from migrate.rules._base import Diagnostic, Rule
from migrate.tables import GUIDE

RAY_ROOTS = ("ray.", "compat.", "compat")


def qualified(visitor: cst.MetadataDependent, node: cst.CSTNode) -> set[str]:
    return {q.name for q in visitor.get_metadata(QualifiedNameProvider, node, set())}


def is_ray_class(names: Iterable[str], class_name: str) -> bool:
    """``names`` include ``<ray or compat module>.class_name``."""
    return any(n.endswith("." + class_name) and n.startswith(RAY_ROOTS) for n in names)


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def is_report(names: set[str]) -> bool:
    return bool(
        names
        & {
            "ray.train.report",
            "ray.air.session.report",
            "ray.train.session.report",
            "compat.report",
            "compat.session.report",
            "ray.train.v2.api.train_fn_utils.report",
        }
    )


class FlagRule(Rule):
    """A rule that never rewrites: subclasses implement :meth:`check`.

    The engine runs consecutive flag rules together in one pass (:func:`run_flag_rules`), so
    the module's metadata is resolved once for all of them.
    """

    fix_safety = "none"
    advice: str = ""

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        run_flag_rules([self], wrapper)
        return wrapper.module

    def check(self, visitor: FlagVisitor, node: cst.CSTNode) -> str | None:
        """Return a message when ``node`` is a finding (called on Call, Attribute and Name nodes)."""
        raise NotImplementedError

    def message(self, what: str) -> str:
        return f"{what}. {self.advice} See {GUIDE}"


def run_flag_rules(rules: list[FlagRule], wrapper: MetadataWrapper) -> None:
    """Run several flag rules in one pass; each appends to its own ``diagnostics``."""
    if rules:
        wrapper.visit(FlagVisitor(rules))


class FlagVisitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider, ParentNodeProvider)

    def __init__(self, rules: list[FlagRule]) -> None:
        super().__init__()
        self.rules = rules
        self.function_depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.function_depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.function_depth -= 1

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def _check(self, node: cst.CSTNode) -> None:
        for rule in self.rules:
            found = rule.check(self, node)
            if found:
                start = self.get_metadata(PositionProvider, node).start
                rule.diagnostics.append(Diagnostic(rule.code, start.line, start.column + 1, rule.message(found), False))
