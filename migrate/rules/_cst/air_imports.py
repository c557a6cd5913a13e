"""The libcst form of :mod:`migrate.rules.air_imports` (imported when a file needs it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (
    GlobalScope,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from migrate.rules._base import Rule
from migrate.rules._cst import RuleVisitor
from migrate.rules._cst import imports as _imports
from migrate.rules._names import STRING_PATH, air_name, string_path
from migrate.tables import AIR_MODULES, AIR_TO_TRAIN

if TYPE_CHECKING:  # a form needs only what every rule has: no import of its rule module
    from migrate.rules._base import Rule


def apply(rule: Rule, wrapper: MetadataWrapper) -> cst.Module:
    plan = _Plan()
    wrapper.visit(_Collect(plan))
    if not (plan.moves or plan.attributes or STRING_PATH.search(wrapper.module.code)):
        return wrapper.module
    counts = _imports.binding_counts(wrapper)
    alias = _imports.existing_train_alias(wrapper.module, counts)
    plan.alias_exists = alias is not None
    plan.alias = alias or _imports.choose_alias(_imports.used_names(wrapper.module), counts)
    module = wrapper.visit(_Rewrite(rule, plan))
    if plan.attributes and not plan.alias_placed and not plan.alias_exists:
        module = _imports.insert_after_imports(module, [_imports.train_import(plan.alias)])
    return _imports.fix_empty_blocks(_imports.without_added_duplicates(wrapper.module, module))


@dataclass
class _Plan:
    moves: set[cst.ImportFrom] = field(default_factory=set)
    attributes: set[cst.Attribute] = field(default_factory=set)
    module_bindings: dict[cst.CSTNode, int] = field(default_factory=dict)  # import stmt -> refs left
    strings: bool = False
    covering: set[cst.CSTNode] = field(default_factory=set)  # those whose scope holds every rewritten use
    alias: str = "train"
    alias_exists: bool = False
    alias_placed: bool = False


class _Collect(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    def __init__(self, plan: _Plan) -> None:
        super().__init__()
        self.plan = plan

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return False
        if get_full_name_for_node(node.module) in AIR_MODULES and any(
            get_full_name_for_node(a.name) in AIR_TO_TRAIN for a in node.names
        ):
            self.plan.moves.add(node)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, node)}
        if air_name(names) is not None and not isinstance(
            self.get_metadata(ParentNodeProvider, node), (cst.ImportAlias, cst.ImportFrom)
        ):
            self.plan.attributes.add(node)
            return False
        return True

    def leave_Module(self, original_node: cst.Module) -> None:
        # For `from ray import air` / `import ray.air...`: how many uses survive the rewrite.
        rewritten_bases = {_base_name(a) for a in self.plan.attributes}
        for scope in _imports.scopes(self.metadata[ScopeProvider]):
            for assignment in scope.assignments:
                node = getattr(assignment, "node", None)
                if not isinstance(node, (cst.Import, cst.ImportFrom)) or assignment.name != _air_binding(node):
                    continue  # not the binding of the air module (`tune` in `from ray import tune, air`)
                left = [r for r in assignment.references if r.node not in rewritten_bases]
                self.plan.module_bindings[node] = len(left)
                rewritten_here = sum(1 for r in assignment.references if r.node in rewritten_bases)
                if isinstance(scope, GlobalScope) or rewritten_here == len(self.plan.attributes):
                    self.plan.covering.add(node)  # a train import here reaches every rewritten use


def _base_name(node: cst.BaseExpression) -> cst.CSTNode:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node


def _air_alias(node: cst.Import | cst.ImportFrom) -> cst.ImportAlias | None:
    """The alias of ``node`` that binds the air module (``air`` of ``from ray import air``,
    ``ray.air`` of ``import ray.air``), if any."""
    if isinstance(node.names, cst.ImportStar):
        return None
    if isinstance(node, cst.ImportFrom):
        if node.relative or node.module is None or get_full_name_for_node(node.module) != "ray":
            return None
        return next((a for a in node.names if get_full_name_for_node(a.name) == "air"), None)
    return next((a for a in node.names if (get_full_name_for_node(a.name) or "").startswith("ray.air")), None)


def _air_binding(node: cst.Import | cst.ImportFrom) -> str | None:
    """The name that alias binds (``air``, an ``as`` name, or ``ray`` for ``import ray.air``)."""
    alias = _air_alias(node)
    if alias is None:
        return None
    if alias.asname is not None:
        return alias.evaluated_alias
    return "air" if isinstance(node, cst.ImportFrom) else "ray"


class _Rewrite(RuleVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self, rule: Rule, plan: _Plan) -> None:
        super().__init__(rule)
        self.plan = plan
        self.annotations = 0  # depth of annotations being visited

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.annotations += 1

    def leave_Annotation(self, original_node: cst.Annotation, updated_node: cst.Annotation) -> cst.Annotation:
        self.annotations -= 1
        return updated_node

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        """``"ray.air.Checkpoint"`` in an annotation -> ``"ray.train.Checkpoint"``."""
        value = original_node.evaluated_value
        if not self.annotations or not isinstance(value, str):
            return updated_node
        new = string_path(value)
        if new is None:
            return updated_node
        self.report(original_node, f"annotation `{value}` -> `{new}`", fixed=True)
        self.plan.strings = True
        return updated_node.with_changes(value=original_node.value.replace(value, new))

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        if original_node not in self.plan.attributes:
            return updated_node
        name = air_name({q.name for q in self.get_metadata(QualifiedNameProvider, original_node)})
        assert name is not None
        new = AIR_TO_TRAIN[name]
        self.report(original_node, f"`{_code(original_node)}` -> `{self.plan.alias}.{new}`", fixed=True)
        return cst.Attribute(value=cst.Name(self.plan.alias), attr=cst.Name(new))

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel:
        out: list[cst.BaseSmallStatement] = []
        extra: list[cst.SimpleStatementLine] = []
        changed = False
        for original, small in zip(original_node.body, updated_node.body, strict=True):
            if isinstance(original, cst.ImportFrom) and original in self.plan.moves:
                kept, moved = self._split(original)
                self.report(
                    original,
                    f"import from `{get_full_name_for_node(original.module or '')}` -> `ray.train`",
                    fixed=True,
                )
                changed = True
                if isinstance(small, cst.ImportFrom) and small.lpar is not None:
                    # In parentheses: the moved names keep the statement's layout and the comments
                    # beside them (a trailing comma is valid there); the rest go below, on one line.
                    last = list(small.names)[-1]  # type: ignore[arg-type]
                    names = [*moved[:-1], _closing(moved[-1], last)] if kept else moved
                    out.append(small.with_changes(module=_dotted("ray.train"), names=names))
                    if kept:  # on one line below, with the comments that stood beside those names
                        plain = small.with_changes(names=_imports.with_commas(kept), lpar=None, rpar=None)
                        extra.append(cst.SimpleStatementLine([plain], trailing_whitespace=_comments_of(kept)))
                elif kept:  # moved names keep the line (and its comment); the rest go below
                    out.append(_from_train(moved))
                    extra.append(cst.SimpleStatementLine([small.with_changes(names=_imports.with_commas(kept))]))
                else:
                    out.append(cst.ImportFrom(module=_dotted("ray.train"), names=_imports.with_commas(moved)))
            elif original in self.plan.module_bindings and self.plan.module_bindings[original] == 0:
                changed = True
                assert isinstance(original, (cst.Import, cst.ImportFrom)) and isinstance(small, type(original))
                rest = _without_air(original, small)  # the statement's other names stay
                placing = (
                    self.plan.attributes
                    and not self.plan.alias_exists
                    and not self.plan.alias_placed
                    and original in self.plan.covering  # else the import goes to module level
                )
                if placing:
                    self.plan.alias_placed = True
                    if rest is None:  # the train import takes over the line (and its comment)
                        out.extend(_imports.train_import(self.plan.alias).body)
                    else:
                        extra.append(_imports.train_import(self.plan.alias))
                if rest is not None:
                    out.append(rest)
            else:
                out.append(small)
        if not changed:
            return updated_node
        if not out and not extra:
            return cst.RemoveFromParent()
        lines: list[cst.BaseStatement] = []
        if out:
            lines.append(updated_node.with_changes(body=_imports.without_trailing_semicolon(out)))
        lines.extend(extra)
        return cst.FlattenSentinel(lines) if len(lines) > 1 else lines[0]

    def _split(self, node: cst.ImportFrom) -> tuple[list[cst.ImportAlias], list[cst.ImportAlias]]:
        assert not isinstance(node.names, cst.ImportStar)
        kept, moved = [], []
        for alias in node.names:
            name = get_full_name_for_node(alias.name) or ""
            if name in AIR_TO_TRAIN:
                new = AIR_TO_TRAIN[name]
                asname = alias.asname
                if new != name and asname is None:
                    asname = cst.AsName(name=cst.Name(name))
                moved.append(alias.with_changes(name=cst.Name(new), asname=asname))
            else:
                kept.append(alias)
        return kept, moved


def _without_air(
    original: cst.Import | cst.ImportFrom, small: cst.Import | cst.ImportFrom
) -> cst.BaseSmallStatement | None:
    """``small`` without the alias that binds the air module; ``import ray.air`` (which also
    binds ``ray``) leaves ``import ray`` unless another alias binds ``ray``. None: nothing left."""
    air = _air_alias(original)
    assert air is not None and not isinstance(original.names, cst.ImportStar)
    assert not isinstance(small.names, cst.ImportStar)
    index = list(original.names).index(air)
    kept = [a for i, a in enumerate(small.names) if i != index]
    if isinstance(original, cst.Import) and air.asname is None:
        binds_ray = any(a.asname is None and (get_full_name_for_node(a.name) or "").startswith("ray") for a in kept)
        if not binds_ray:
            kept.insert(index, cst.ImportAlias(name=cst.Name("ray")))
    if not kept:
        return None
    return small.with_changes(names=_imports.with_commas(kept, like=small))


def _comments_of(aliases: list[cst.ImportAlias]) -> cst.TrailingWhitespace:
    """A line ending that carries the comments written beside ``aliases`` in parentheses."""
    comments = [
        a.comma.whitespace_after.first_line.comment.value
        for a in aliases
        if isinstance(a.comma, cst.Comma)
        and isinstance(a.comma.whitespace_after, cst.ParenthesizedWhitespace)
        and a.comma.whitespace_after.first_line.comment is not None
    ]
    if not comments:
        return cst.TrailingWhitespace()
    text = "# " + "; ".join(c.lstrip("#").strip() for c in comments)
    return cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(text))


def _closing(alias: cst.ImportAlias, last: cst.ImportAlias) -> cst.ImportAlias:
    """``alias``, now the last name in the parentheses, ending as the statement's last name
    ended (its own comment kept): the closing parenthesis stays where it was."""
    comma = alias.comma
    if not isinstance(comma, cst.Comma) or not isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        return alias
    ending = last.comma.whitespace_after if isinstance(last.comma, cst.Comma) else None
    if isinstance(ending, cst.ParenthesizedWhitespace):
        whitespace = comma.whitespace_after.with_changes(indent=ending.indent, last_line=ending.last_line)
    else:
        whitespace = comma.whitespace_after.with_changes(indent=False, last_line=cst.SimpleWhitespace(""))
    return alias.with_changes(comma=comma.with_changes(whitespace_after=whitespace))


def _from_train(aliases: list[cst.ImportAlias]) -> cst.ImportFrom:
    return cst.ImportFrom(module=_dotted("ray.train"), names=_imports.with_commas(aliases))


def _dotted(name: str) -> cst.Attribute | cst.Name:
    expr = cst.parse_expression(name)
    assert isinstance(expr, (cst.Attribute, cst.Name))
    return expr


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
