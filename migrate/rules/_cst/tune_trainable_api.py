"""The libcst form of :mod:`migrate.rules.tune_trainable_api` (imported when a file needs it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from migrate import _roles
from migrate._roles import roles_of
from migrate.rules._base import Rule
from migrate.rules._cst import RuleVisitor, qualified
from migrate.rules._cst import imports as _imports
from migrate.rules._names import PRUNED_MODULES, TRAIN_TO_TUNE, TUNER_CONFIGS

if TYPE_CHECKING:  # a form needs only what every rule has: no import of its rule module
    from migrate.rules._base import Rule


def apply(rule: Rule, wrapper: MetadataWrapper) -> cst.Module:
    roles = roles_of(rule.index_of(wrapper))
    counts = _imports.binding_counts(wrapper)
    existing = _imports.existing_alias(wrapper.module, counts, "tune")
    alias = existing or _imports.choose_alias(_imports.used_names(wrapper.module), counts, "tune")
    rewrite = _Rewrite(rule, roles.tune, alias)
    module = wrapper.visit(rewrite)
    if not rewrite.changed:
        return module
    unused = _now_unused(wrapper, rewrite.replaced)
    if unused:
        module = module.visit(_DropImports(unused))
    if existing is None:
        module = _imports.insert_after_imports(module, [_imports.module_import("tune", alias)])
    return module


def _now_unused(wrapper: MetadataWrapper, replaced: set[int]) -> set[str]:
    """Names bound by a module-level ``from ray.train/ray.air... import`` whose every use was rewritten."""
    scope = wrapper.resolve(ScopeProvider).get(wrapper.module)
    unused: set[str] = set()
    if scope is None:
        return unused
    for assignment in scope.assignments:
        node = getattr(assignment, "node", None)
        if not isinstance(node, cst.ImportFrom) or node.relative or node.module is None:
            continue
        if get_full_name_for_node(node.module) not in PRUNED_MODULES:
            continue
        references = list(assignment.references)
        if references and all(id(ref.node) in replaced for ref in references):
            unused.add(assignment.name)
    return unused


class _DropImports(cst.CSTTransformer):
    """Remove the given names from module-level ``from ray.train/ray.air... import`` lines."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        body: list[cst.BaseSmallStatement] = []
        for small in updated_node.body:
            if (
                isinstance(small, cst.ImportFrom)
                and not small.relative
                and small.module is not None
                and get_full_name_for_node(small.module) in PRUNED_MODULES
                and not isinstance(small.names, cst.ImportStar)
            ):
                kept = [a for a in small.names if (a.evaluated_alias or a.evaluated_name) not in self.names]
                if not kept:
                    continue
                names = _imports.with_commas(kept, like=small)
                small = small.with_changes(names=names, lpar=small.lpar, rpar=small.rpar)
            body.append(small)
        if body:
            return updated_node.with_changes(body=_imports.without_trailing_semicolon(body))
        if updated_node.trailing_whitespace.comment is not None:
            return original_node  # keep a line that carries a comment (its import stays)
        return cst.RemoveFromParent()


class _Rewrite(RuleVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider, ExpressionContextProvider)

    def __init__(self, rule: Rule, trainables: frozenset[str], alias: str) -> None:
        super().__init__(rule)
        self.trainables = trainables
        self.alias = alias
        self.functions: list[str] = []
        self.changed = False
        self.replaced: set[int] = set()  # ids of the original Name nodes whose use was rewritten

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.functions.pop()
        return updated_node

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def _replace(self, original: cst.Name | cst.Attribute, updated: cst.BaseExpression) -> cst.BaseExpression:
        if not self.trainables.intersection(self.functions):
            return updated
        if self.get_metadata(ExpressionContextProvider, original, ExpressionContext.LOAD) != ExpressionContext.LOAD:
            return updated
        names = sorted(qualified(self, original) & TRAIN_TO_TUNE.keys())
        if not names:
            return updated
        target = f"{self.alias}.{TRAIN_TO_TUNE[names[0]]}"
        self.replaced.add(id(_base(original)))
        old = cst.Module(body=[]).code_for_node(original)
        self.report(original, f"`{old}` -> `{target}` (in a Tune function trainable)", fixed=True)
        self.changed = True
        return cst.parse_expression(target)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if not qualified(self, original_node.func) & _roles.TUNE_RUNNERS:
            return updated_node
        args = list(updated_node.args)
        for i, arg in enumerate(original_node.args):
            if arg.keyword is not None and arg.keyword.value == "run_config":
                args[i] = args[i].with_changes(value=self._tune_config(arg.value, args[i].value))
        return updated_node.with_changes(args=args)

    def _tune_config(self, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression:
        """``RunConfig(...)`` -> ``tune.RunConfig(...)``, and the same inside its arguments."""
        if not isinstance(original, cst.Call) or not isinstance(updated, cst.Call):
            return updated
        names = sorted(qualified(self, original.func) & TUNER_CONFIGS.keys())
        if not names:
            return updated
        target = f"{self.alias}.{TUNER_CONFIGS[names[0]]}"
        self.replaced.add(id(_base(original.func)))
        old = cst.Module(body=[]).code_for_node(original.func)
        self.report(original, f"`{old}(...)` -> `{target}(...)` (passed to a Tuner)", fixed=True)
        self.changed = True
        args = [
            new.with_changes(value=self._tune_config(old_arg.value, new.value))
            for old_arg, new in zip(original.args, updated.args, strict=True)
        ]
        return updated.with_changes(func=cst.parse_expression(target), args=args)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return self._replace(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._replace(original_node, updated_node)


def _base(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node
