"""The libcst form of :mod:`migrate.rules.compat_target` (imported when a file needs it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, ParentNodeProvider, QualifiedNameProvider, ScopeProvider

from migrate.rules._base import Rule
from migrate.rules._cst import RuleVisitor
from migrate.rules._cst import imports as _imports
from migrate.rules._names import compat_path
from migrate.tables import COMPAT_MODULES, COMPAT_NAMES

if TYPE_CHECKING:  # a form needs only what every rule has: no import of its rule module
    from migrate.rules._base import Rule


def apply(rule: Rule, wrapper: MetadataWrapper) -> cst.Module:
    collect = _Collect()
    wrapper.visit(collect)
    module = wrapper.visit(_Rewrite(rule, collect))
    if collect.attributes:
        statement = cst.parse_statement("import compat\n")
        assert isinstance(statement, cst.SimpleStatementLine)
        if "compat" not in _imports.used_names(wrapper.module) or not _imports_compat(module):
            module = _imports.insert_after_imports(module, [statement])
    return module


def _imports_compat(module: cst.Module) -> bool:
    return any(
        isinstance(s, cst.SimpleStatementLine)
        and any(
            isinstance(x, cst.Import)
            and any(get_full_name_for_node(a.name) == "compat" and a.asname is None for a in x.names)
            for x in s.body
        )
        for s in module.body
    )


class _Collect(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    def __init__(self) -> None:
        super().__init__()
        self.attributes: dict[cst.Attribute, str] = {}
        # `from ray import train` / `import ray.train as t` -> the uses compat cannot take (blockers)
        self.module_imports: dict[cst.ImportFrom | cst.Import, list[str]] = {}

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        base = node
        while isinstance(base, cst.Attribute):
            base = base.value  # type: ignore[assignment]
        if isinstance(base, cst.Name) and base.value == "ray":
            for q in self.get_metadata(QualifiedNameProvider, node):
                target = compat_path(q.name)
                if target is not None:
                    self.attributes[node] = target
                    return False
        return True

    def leave_Module(self, original_node: cst.Module) -> None:
        """Per ``from ray import train``: the uses compat cannot take (blockers). When there
        are some, the import stays for them and every other ``train.X`` use moves to
        ``compat.X`` on its own."""
        for scope in _imports.scopes(self.metadata[ScopeProvider]):
            for assignment in scope.assignments:
                node = getattr(assignment, "node", None)
                train = _train_alias(node)
                if train is None or not isinstance(node, (cst.ImportFrom, cst.Import)):
                    continue
                if assignment.name != (train.evaluated_alias or "train"):
                    continue  # another name of the same import (`tune` in `from ray import train, tune`)
                blockers: list[str] = []
                movable: list[cst.Attribute] = []
                for ref in assignment.references:
                    parent = self.get_metadata(ParentNodeProvider, ref.node, None)
                    if isinstance(parent, cst.Attribute) and parent.value is ref.node:
                        if parent.attr.value in COMPAT_NAMES:
                            movable.append(parent)
                        else:
                            blockers.append(parent.attr.value)
                    else:
                        blockers.append("<used as a value>")
                self.module_imports[node] = blockers
                if blockers:
                    for attribute in movable:
                        self.attributes[attribute] = f"compat.{attribute.attr.value}"


def _train_alias(node: object) -> cst.ImportAlias | None:
    """The alias that binds ``ray.train`` to a name of its own in ``node``: ``train`` of
    ``from ray import train [as t]``, or ``ray.train as t`` of ``import ray.train as t``."""
    if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
        if node.module is not None and not node.relative and get_full_name_for_node(node.module) == "ray":
            return next((a for a in node.names if get_full_name_for_node(a.name) == "train"), None)
    if isinstance(node, cst.Import):
        return next((a for a in node.names if get_full_name_for_node(a.name) == "ray.train" and a.asname), None)
    return None


class _Rewrite(RuleVisitor):
    def __init__(self, rule: Rule, collect: _Collect) -> None:
        super().__init__(rule)
        self.collect = collect

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        target = self.collect.attributes.get(original_node)
        if target is None:
            return updated_node
        self.report(original_node, f"`{cst.Module(body=[]).code_for_node(original_node)}` -> `{target}`", fixed=True)
        return cst.parse_expression(target)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        lines: list[cst.SimpleStatementLine] = []
        body: list[cst.BaseSmallStatement] = []
        changed = False
        for original, small in zip(original_node.body, updated_node.body, strict=True):
            replacement = None
            if isinstance(original, cst.ImportFrom):
                replacement = self._import(original, small)
            elif isinstance(original, cst.Import):
                replacement = self._module_alias(original, small)
            if replacement is None:
                body.append(small)
                continue
            changed = True
            first, *rest = replacement
            body.append(first)
            lines.extend(cst.SimpleStatementLine([r]) for r in rest)
        if not changed:
            return updated_node
        out: list[cst.BaseStatement] = [updated_node.with_changes(body=body), *lines]
        return cst.FlattenSentinel(out) if len(out) > 1 else out[0]

    def _module_alias(self, original: cst.Import, small: cst.BaseSmallStatement) -> list[cst.BaseSmallStatement] | None:
        """``import ray.train as t`` -> ``import compat as t`` when every use of ``t`` has a compat
        equivalent; kept and flagged otherwise (as ``from ray import train``)."""
        train = _train_alias(original)
        if train is None:
            return None
        alias = train.evaluated_alias
        blockers = self.collect.module_imports.get(original, [])
        if blockers:
            self.report(
                original,
                f"kept `import ray.train as {alias}` for `{', '.join(sorted(set(blockers)))}` (not in compat); "
                "its other uses now go through compat",
                fixed=False,
            )
            return None
        self.report(original, f"`import ray.train as {alias}` -> `import compat as {alias}`", fixed=True)
        statement = cst.parse_statement(f"import compat as {alias}\n")
        assert isinstance(statement, cst.SimpleStatementLine) and isinstance(small, cst.Import)
        new: list[cst.BaseSmallStatement] = [statement.body[0]]
        others = [a for a in original.names if a is not train]
        if others:
            new.append(small.with_changes(names=_imports.with_commas(others, like=small)))
        return new

    def _import(self, original: cst.ImportFrom, small: cst.BaseSmallStatement) -> list[cst.BaseSmallStatement] | None:
        if original.relative or original.module is None or isinstance(original.names, cst.ImportStar):
            return None
        module = get_full_name_for_node(original.module)
        assert isinstance(small, cst.ImportFrom)
        if module == "ray":
            blockers = self.collect.module_imports.get(original, [])
            train = [a for a in original.names if get_full_name_for_node(a.name) == "train"]
            if not train:
                return None
            if blockers:
                self.report(
                    original,
                    f"kept `from ray import train` for `{', '.join(sorted(set(blockers)))}` (not in compat); "
                    "its other uses now go through compat",
                    fixed=False,
                )
                return None
            alias = train[0].evaluated_alias or "train"
            self.report(original, f"`from ray import train` -> `import compat as {alias}`", fixed=True)
            statement = cst.parse_statement(f"import compat as {alias}\n")
            assert isinstance(statement, cst.SimpleStatementLine)
            new: list[cst.BaseSmallStatement] = [statement.body[0]]
            others = [a for a in original.names if a not in train]
            if others:
                new.append(small.with_changes(names=_imports.with_commas(others, like=small)))
            return new
        if module not in COMPAT_MODULES:
            return None
        target, names = COMPAT_MODULES[module]
        moved = [a for a in original.names if get_full_name_for_node(a.name) in names]
        if not moved:
            return None
        kept = [a for a in original.names if a not in moved]
        self.report(original, f"`from {module} import ...` -> `from {target} import ...`", fixed=True)
        new = [small.with_changes(module=cst.parse_expression(target), names=_imports.with_commas(moved, like=small))]
        if kept:
            new.append(small.with_changes(names=_imports.with_commas(kept, like=small)))
        return new
