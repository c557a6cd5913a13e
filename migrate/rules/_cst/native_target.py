"""The libcst form of :mod:`migrate.rules.native_target` (imported when a file needs it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, ScopeProvider

from migrate.rules._base import Rule
from migrate.rules._cst import RuleVisitor
from migrate.rules._cst import imports as _imports
from migrate.rules._names import NATIVE, NATIVE_MODULES
from migrate.tables import COMPAT_TORCH_NAMES

if TYPE_CHECKING:  # a form needs only what every rule has: no import of its rule module
    from migrate.rules._base import Rule


def apply(rule: Rule, wrapper: MetadataWrapper) -> cst.Module:
    plan = _Plan()
    wrapper.visit(_Collect(plan))
    if not plan.statements:
        return wrapper.module
    return wrapper.visit(_Rewrite(rule, plan))


@dataclass
class _Plan:
    # import statement -> names that keep it on compat (empty: rewrite it)
    statements: dict[cst.CSTNode, list[str]] = field(default_factory=dict)
    # `compat.X` / `alias.X` -> (new code, the import statement it depends on)
    attributes: dict[cst.Attribute, tuple[str, cst.CSTNode]] = field(default_factory=dict)
    torch_used: set[cst.CSTNode] = field(default_factory=set)  # bare `import compat` whose uses reach compat.torch


class _Collect(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (ScopeProvider, ParentNodeProvider)

    def __init__(self, plan: _Plan) -> None:
        super().__init__()
        self.plan = plan

    def leave_Module(self, original_node: cst.Module) -> None:
        for scope in _imports.scopes(self.metadata[ScopeProvider]):
            for assignment in scope.assignments:
                node = getattr(assignment, "node", None)
                if isinstance(node, cst.Import):
                    self._module_import(node, assignment)
                elif isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None:
                    module = get_full_name_for_node(node.module)
                    if (module == "compat" or module in NATIVE_MODULES) and not isinstance(node.names, cst.ImportStar):
                        names = NATIVE if module == "compat" else {n: n for n in NATIVE_MODULES[module][1]}
                        blockers = [a.evaluated_name for a in node.names if a.evaluated_name not in names]
                        self.plan.statements[node] = blockers

    def _module_import(self, node: cst.Import, assignment: object) -> None:
        alias = next((a for a in node.names if a.evaluated_name in ("compat", "compat.torch")), None)
        if alias is None:
            return
        name = getattr(assignment, "name", None)
        if alias.asname is None and alias.evaluated_name == "compat.torch" and name == "compat.torch":
            # `import compat.torch` also records the dotted name: its uses are `compat.torch` itself
            blockers = self.plan.statements.setdefault(node, [])
            for ref in getattr(assignment, "references", ()):
                parent = self.get_metadata(ParentNodeProvider, ref.node, None)
                if isinstance(parent, cst.Attribute) and parent.value is ref.node:
                    if parent.attr.value not in COMPAT_TORCH_NAMES:
                        blockers.append(f"torch.{parent.attr.value}")
                if isinstance(ref.node, cst.Attribute):
                    self.plan.attributes[ref.node] = ("ray.train.torch", node)
            return
        if name != (alias.evaluated_alias or alias.evaluated_name.split(".")[0]):
            return
        blockers = self.plan.statements.setdefault(node, [])
        bare = alias.asname is None  # `import compat` / `import compat.torch`: both bind `compat`
        torch_alias = not bare and alias.evaluated_name == "compat.torch"  # `ct.X`: X is a compat.torch name
        for ref in getattr(assignment, "references", ()):
            parent = self.get_metadata(ParentNodeProvider, ref.node, None)
            if not (isinstance(parent, cst.Attribute) and parent.value is ref.node):
                blockers.append("<used as a value>")
                continue
            attr = parent.attr.value
            if torch_alias:
                if attr not in COMPAT_TORCH_NAMES:
                    blockers.append(f"torch.{attr}")
            elif attr == "torch":
                grand = self.get_metadata(ParentNodeProvider, parent, None)
                if isinstance(grand, cst.Attribute) and grand.value is parent:
                    if grand.attr.value not in COMPAT_TORCH_NAMES:
                        blockers.append(f"torch.{grand.attr.value}")
                if bare:
                    self.plan.torch_used.add(node)
                    self.plan.attributes[parent] = ("ray.train.torch", node)
            elif attr in NATIVE:
                target = NATIVE[attr]
                if bare:
                    self.plan.attributes[parent] = (f"ray.train.{target}", node)
                elif target != attr:
                    self.plan.attributes[parent] = (f"{alias.evaluated_alias}.{target}", node)
            else:
                blockers.append(attr)


class _Rewrite(RuleVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, rule: Rule, plan: _Plan) -> None:
        super().__init__(rule)
        self.plan = plan

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        found = self.plan.attributes.get(original_node)
        if found is None or self.plan.statements.get(found[1]):
            return updated_node  # an import that stays on compat keeps its uses' compat spelling
        return cst.parse_expression(found[0])

    def _stays(self, node: cst.CSTNode) -> bool:
        """The import is not compat's, or stays on compat for what only compat has (flagged)."""
        blockers = self.plan.statements.get(node)
        if blockers:
            message = f"kept on compat: `{', '.join(sorted(set(blockers)))}` exist only in compat"
            self.report(node, message, fixed=False)
        return blockers is None or bool(blockers)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.BaseSmallStatement:
        if self._stays(original_node):
            return updated_node
        if len(updated_node.names) == 1 and updated_node.names[0].asname is not None:
            alias = updated_node.names[0]
            module, name = ("ray.train", "torch") if alias.evaluated_name == "compat.torch" else ("ray", "train")
            self.report(
                original_node, f"`import {alias.evaluated_name} as ...` -> `from {module} import {name}`", fixed=True
            )
            suffix = "" if alias.evaluated_alias == name else f" as {alias.evaluated_alias}"
            statement = cst.parse_statement(f"from {module} import {name}{suffix}\n")
            assert isinstance(statement, cst.SimpleStatementLine)
            return statement.body[0].with_changes(semicolon=updated_node.semicolon)
        names = []
        for alias in updated_node.names:
            name = alias.evaluated_name
            if name == "compat" and alias.asname is None:
                new = "ray.train.torch" if original_node in self.plan.torch_used else "ray.train"
                names.append(alias.with_changes(name=cst.parse_expression(new)))
            elif name == "compat.torch":
                names.append(alias.with_changes(name=cst.parse_expression("ray.train.torch")))
            elif name == "compat":
                names.append(alias.with_changes(name=cst.parse_expression("ray.train")))
            else:
                names.append(alias)
        self.report(original_node, "`import compat` -> native `ray.train`", fixed=True)
        return updated_node.with_changes(names=names)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        if self._stays(original_node):
            return updated_node
        module = get_full_name_for_node(original_node.module)  # type: ignore[arg-type]
        assert module is not None
        target, renames = NATIVE_MODULES[module][0] if module in NATIVE_MODULES else "ray.train", NATIVE
        if module != "compat":
            renames = {}  # a framework module's names are ray.train's own
        names = []
        assert not isinstance(updated_node.names, cst.ImportStar)
        for alias in updated_node.names:
            new = renames.get(alias.evaluated_name, alias.evaluated_name)
            if new != alias.evaluated_name:
                asname = alias.asname or cst.AsName(name=cst.Name(alias.evaluated_name))
                alias = alias.with_changes(name=cst.Name(new), asname=asname)
            names.append(alias)
        self.report(original_node, f"`from {module} import ...` -> `from {target} import ...`", fixed=True)
        return updated_node.with_changes(module=cst.parse_expression(target), names=names)
