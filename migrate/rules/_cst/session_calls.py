"""The libcst form of :mod:`migrate.rules.session_calls` (imported when a file needs it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, ParentNodeProvider, QualifiedNameProvider, ScopeProvider

from migrate import _roles
from migrate._roles import roles_of
from migrate.rules._base import Rule
from migrate.rules._cst import RuleVisitor
from migrate.rules._cst import imports as _imports
from migrate.rules._names import Stack, session_function
from migrate.tables import SESSION_FUNCTIONS, SESSION_MODULES, TUNE_SESSION_FUNCTIONS

if TYPE_CHECKING:  # a form needs only what every rule has: no import of its rule module
    from migrate.rules._base import Rule


def apply(rule: Rule, wrapper: MetadataWrapper) -> cst.Module:
    plan = _Plan(roles=roles_of(rule.index_of(wrapper)))
    wrapper.visit(_Collect(plan))
    if not plan.calls:
        return wrapper.module
    counts = _imports.binding_counts(wrapper)
    used = _imports.used_names(wrapper.module)
    existing = _imports.existing_train_alias(wrapper.module, counts)
    plan.alias = existing or _imports.choose_alias(used, counts)
    if existing is not None:
        plan.provided.add(())
        plan.existing_alias = True
    if any(role == "tune" for _, _, role in plan.calls.values()):
        existing_tune = _imports.existing_alias(wrapper.module, counts, "tune")
        plan.tune_alias = existing_tune or _imports.choose_alias(used | {plan.alias}, counts, "tune")
        plan.needs_tune_import = existing_tune is None
    plan.decide()
    module = wrapper.visit(_Rewrite(rule, plan))
    new_imports = [_imports.train_import(plan.alias)] if plan.needs_module_import else []
    if plan.needs_tune_import:
        new_imports.append(_imports.module_import("tune", plan.tune_alias))
    if new_imports:
        module = _imports.insert_after_imports(module, new_imports)
    return _imports.fix_empty_blocks(_imports.without_added_duplicates(wrapper.module, module))


@dataclass
class _Plan:
    roles: _roles.Roles
    # call -> (session function, enclosing scopes, "tune" inside a Tune function trainable else "train")
    calls: dict[cst.Call, tuple[str, Stack, str]] = field(default_factory=dict)
    imports: dict[cst.CSTNode, tuple[set[str], Stack]] = field(default_factory=dict)  # stmt -> (names, scope)
    blocks: dict[cst.CSTNode, int] = field(default_factory=dict)  # stmt -> id of the block holding it
    existing_alias: bool = False  # the module already binds ray.train at module level
    value_uses: set[str] = field(default_factory=set)  # session names used other than in calls
    ray_name_used: bool = False  # `ray` used outside rewritten calls (keeps `import ray`)
    alias: str = "train"
    tune_alias: str = "tune"
    needs_tune_import: bool = False
    provided: set[Stack] = field(default_factory=set)
    place_at: set[cst.CSTNode] = field(default_factory=set)
    needs_module_import: bool = False
    # import stmt (not a session one) -> names every use of which is a rewritten call: a name
    # bound both by a session import and by `from ray.train import report` in a version guard
    # or a duplicate import; once its calls are `train.report`, that import would be unused.
    orphaned: dict[cst.CSTNode, set[str]] = field(default_factory=dict)

    def decide(self) -> None:
        """Place one ``ray.train`` import per scope that needs it, outermost first, and one
        in each other block that held a replaced session import in that scope: the branches
        of a ``try``/``except ImportError`` or an ``if``/``else`` version guard each bind
        ``train``, as each bound the session before."""
        call_scopes = {scope for _, scope, role in self.calls.values() if role == "train"}
        placed_blocks: set[tuple[Stack, int]] = set()
        for node, (_, scope) in sorted(self.imports.items(), key=lambda kv: len(kv[1][1])):
            if not any(c[: len(scope)] == scope for c in call_scopes):
                continue
            block = (scope, self.blocks.get(node, 0))
            if self.existing_alias or (self._covered(scope) and (scope not in self.provided or block in placed_blocks)):
                continue  # an existing module-level `from ray import train` covers every branch
            self.place_at.add(node)
            self.provided.add(scope)
            placed_blocks.add(block)
        self.needs_module_import = not all(self._covered(c) for c in call_scopes)

    def _covered(self, scope: Stack) -> bool:
        return any(scope[:i] in self.provided for i in range(len(scope) + 1))


class _Collect(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider, ParentNodeProvider)

    def __init__(self, plan: _Plan) -> None:
        super().__init__()
        self.plan = plan
        self.stack: list[int] = []
        self.names: list[str] = []  # names of the enclosing function definitions
        self.ray_names: list[cst.Name] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append(id(node))
        self.names.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()
        self.names.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.stack.append(id(node))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.stack.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = session_function({q.name for q in self.get_metadata(QualifiedNameProvider, node.func)})
        if func is not None:
            role = "tune" if self.plan.roles.of(self.names) == "tune" and func in TUNE_SESSION_FUNCTIONS else "train"
            self.plan.calls[node] = (func, tuple(self.stack), role)

    def visit_Import(self, node: cst.Import) -> bool:
        names = {
            a.evaluated_alias or ""
            for a in node.names
            if get_full_name_for_node(a.name) in SESSION_MODULES and a.asname
        }
        plain = [a for a in node.names if get_full_name_for_node(a.name) in SESSION_MODULES and not a.asname]
        if names or plain:
            self.plan.imports[node] = (names | {"ray"} if plain else names, tuple(self.stack))
            self.plan.blocks[node] = self._block(node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None or node.relative or isinstance(node.names, cst.ImportStar):
            return False
        module = get_full_name_for_node(node.module) or ""
        names: set[str] = set()
        for alias in node.names:
            name = get_full_name_for_node(alias.name) or ""
            if f"{module}.{name}" in SESSION_MODULES or (module in SESSION_MODULES and name in SESSION_FUNCTIONS):
                names.add(alias.evaluated_alias or name)
        if names:
            self.plan.imports[node] = (names, tuple(self.stack))
            self.plan.blocks[node] = self._block(node)
        return False

    def _block(self, node: cst.CSTNode) -> int:
        """Identity of the statement block (module body, try body, except body...) holding ``node``."""
        line = self.get_metadata(ParentNodeProvider, node, None)
        block = self.get_metadata(ParentNodeProvider, line, None) if line is not None else None
        return id(block)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "ray":
            self.ray_names.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        """A session name still referenced outside a rewritten call keeps its import."""
        rewritten = {id(_base(call.func)) for call in self.plan.calls}
        exported = _imports.exported_names(original_node)
        self.plan.ray_name_used = any(id(n) not in rewritten for n in self.ray_names)
        for scope in _imports.scopes(self.metadata[ScopeProvider]):
            for assignment in scope.assignments:
                node = getattr(assignment, "node", None)
                if isinstance(node, (cst.Import, cst.ImportFrom)) and node not in self.plan.imports:
                    # `import ray` read only as `ray.air.session.report(...)`, or the ray.train
                    # binding of a name a session import bound too: unused once the calls are rewritten
                    if assignment.references and all(id(ref.node) in rewritten for ref in assignment.references):
                        if assignment.name not in exported:
                            self.plan.orphaned.setdefault(node, set()).add(assignment.name)
                    continue
                if node not in self.plan.imports or assignment.name == "ray":
                    continue
                if any(id(ref.node) not in rewritten for ref in assignment.references):
                    self.plan.value_uses.add(assignment.name)
        self.plan.value_uses |= exported  # a re-export keeps its import
        # `import ray` beside `import ray.air.session`: libcst counts `ray.air.session.report(...)`
        # as a use of the dotted import only; once those calls are rewritten, nothing reads `ray`.
        called_through_ray = any(
            isinstance(base := _base(call.func), cst.Name) and base.value == "ray" for call in self.plan.calls
        )
        if called_through_ray and not self.plan.ray_name_used and "ray" not in exported:
            for scope in _imports.scopes(self.metadata[ScopeProvider]):
                for assignment in scope.assignments:
                    node = getattr(assignment, "node", None)
                    if assignment.name == "ray" and isinstance(node, cst.Import) and node not in self.plan.imports:
                        self.plan.orphaned.setdefault(node, set()).add("ray")


def _base(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node


class _Rewrite(RuleVisitor):
    def __init__(self, rule: Rule, plan: _Plan) -> None:
        super().__init__(rule)
        self.plan = plan

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if original_node not in self.plan.calls:
            return updated_node
        func, _, role = self.plan.calls[original_node]
        alias = self.plan.tune_alias if role == "tune" else self.plan.alias
        target = f"{alias}.{SESSION_FUNCTIONS[func]}"
        old = cst.Module(body=[]).code_for_node(original_node.func)
        self.report(original_node, f"`{old}(...)` -> `{target}(...)`", fixed=True)
        return updated_node.with_changes(func=cst.parse_expression(target))

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel:
        out: list[cst.BaseSmallStatement] = []
        extra: list[cst.BaseStatement] = []
        changed = False
        for original, small in zip(original_node.body, updated_node.body, strict=True):
            if original in self.plan.orphaned and isinstance(small, (cst.Import, cst.ImportFrom)):
                changed = True
                names = self.plan.orphaned[original]
                self.report(original, f"`{', '.join(sorted(names))}` no longer used: import removed", fixed=True)
                kept = _without(small, names)
                if kept is not None:
                    out.append(kept)
                continue
            if original not in self.plan.imports:
                out.append(small)
                continue
            names, _ = self.plan.imports[original]
            if original in self.plan.place_at:
                changed = True
                extra.append(_imports.train_import(self.plan.alias))
            if names & self.plan.value_uses:
                out.append(small)  # still needed; RTM100 flags the remaining use
                continue
            changed = True
            rest = _without_session(small, self.plan.ray_name_used)
            if rest is not None:
                out.append(rest)
        if not changed:
            return updated_node
        lines: list[cst.BaseStatement] = []
        if out:
            lines.append(updated_node.with_changes(body=_imports.without_trailing_semicolon(out)))
        elif extra:  # the first new import takes over the line, with its comment
            extra[0] = updated_node.with_changes(body=extra[0].body)  # type: ignore[attr-defined]
        lines.extend(extra)
        if not lines:
            return cst.RemoveFromParent()
        return cst.FlattenSentinel(lines) if len(lines) > 1 else lines[0]


def _without(node: cst.Import | cst.ImportFrom, names: set[str]) -> cst.Import | cst.ImportFrom | None:
    """The import minus the aliases that bind ``names`` (None when nothing is left)."""
    assert not isinstance(node.names, cst.ImportStar)
    if isinstance(node, cst.Import):  # `import a.b` binds `a`
        kept = [a for a in node.names if (a.evaluated_alias or a.evaluated_name.split(".")[0]) not in names]
        return node.with_changes(names=_last_comma(kept)) if kept else None
    kept = [a for a in node.names if (a.evaluated_alias or a.evaluated_name) not in names]
    return node.with_changes(names=_imports.with_commas(kept, like=node)) if kept else None


def _without_session(node: cst.BaseSmallStatement, ray_used: bool) -> cst.BaseSmallStatement | None:
    """The import minus its session names (None when nothing is left)."""
    if isinstance(node, cst.Import):
        kept = [a for a in node.names if get_full_name_for_node(a.name) not in SESSION_MODULES]
        if not kept and ray_used and any(a.asname is None for a in node.names):
            kept = [cst.ImportAlias(name=cst.Name("ray"))]  # `import ray.air.session` also bound `ray`
        return node.with_changes(names=_last_comma(kept)) if kept else None
    assert isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar)
    module = get_full_name_for_node(node.module) or ""  # type: ignore[arg-type]
    kept = [
        a
        for a in node.names
        if f"{module}.{get_full_name_for_node(a.name)}" not in SESSION_MODULES
        and not (module in SESSION_MODULES and get_full_name_for_node(a.name) in SESSION_FUNCTIONS)
    ]
    return node.with_changes(names=_last_comma(kept)) if kept else None


def _last_comma(aliases: list[cst.ImportAlias]) -> list[cst.ImportAlias]:
    if aliases:
        aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return aliases
