"""RTM002: the V1 session API becomes ``ray.train``'s functions and context."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from migrate import _fast, _imports
from migrate._index import Index
from migrate._roles import roles_of
from migrate.rules._base import Diagnostic, Rule
from migrate.rules._names import exported as exported_names
from migrate.rules._names import session_function
from migrate.tables import SESSION_FUNCTIONS, SESSION_MODULES, TUNE_SESSION_FUNCTIONS

if TYPE_CHECKING:  # libcst only when a file needs the libcst form
    import libcst as cst
    from libcst.metadata import MetadataWrapper


class SessionCalls(Rule):
    """## What it does
    Rewrites calls of the V1 session API (``from ray.air import session``, ``import
    ray.air.session``, ``from ray.air.session import report``, any alias) to
    ``ray.train``: ``session.report`` -> ``train.report``, ``session.get_checkpoint`` ->
    ``train.get_checkpoint``, ``session.get_world_rank()`` ->
    ``train.get_context().get_world_rank()``, and so on. The session import is replaced
    by ``from ray import train`` in the same scope (or reuses an existing one); when the
    module already uses the name ``train`` (``def train(config): ...``) the import is
    ``from ray import train as ray_train``.

    ## Why is this bad?
    Inside Ray Train V2 workers ``ray.air.session`` is silently wrong: every worker is
    rank 0, the world size is 1 and ``report`` does nothing; only a warning says so.

    ## Example
    ```python
    from ray.air import session


    def train_func(config):
        rank = session.get_world_rank()
        session.report({"rank": rank})
    ```

    ## Use instead
    ```python
    from ray import train


    def train_func(config):
        rank = train.get_context().get_world_rank()
        train.report({"rank": rank})
    ```

    ## Fix safety
    Safe: the ``ray.train`` functions are what the session functions call under V1, and
    correct under V2. A session object used as a value (passed to a callback, ``session =
    None`` fallbacks) is left alone and flagged by RTM100.
    """

    code = "RTM002"
    name = "session-calls"
    trigger = re.compile(r"session")
    summary = "Replace ray.air.session calls with ray.train functions"
    fix_safety = "safe"

    @classmethod
    def could_apply(cls, index: Index) -> bool:
        return _imports.member(index.names, SESSION_MODULES, SESSION_FUNCTIONS) is not None

    def fast(self, index: Index) -> str | None:
        """One module-level ``from ... import session`` (or session functions) alone on its
        line, each call of a session function a plain call in a Train loop or undecided
        code: each call becomes ``train.<function>``, and the import ``from ray import
        train`` (or stays, with that import below it, while the session is also used as a
        value). libcst for everything else (several session imports, imports in functions
        or branches, rebound names, Tune trainables, re-exports)."""
        calls = []
        for item in index.nodes:
            if type(item.node) is ast.Call:
                function = session_function(set(index.qualified(item.node.func)))
                if function is not None:
                    calls.append((item, function))
        if not calls:
            return index.text
        imports = [(n, p, f) for n, p, f in index.import_statements if _binds_session(n)]
        if len(imports) != 1 or any(q == "ray.train" for _, q in index.imports):
            return None  # several imports to place, or an existing `train` to reuse
        node, parent, functions = imports[0]
        if parent is not None or functions or not isinstance(node, ast.ImportFrom):
            return None
        line = _fast.alone(index, node)
        if line is None or not _fast.canonical(index, node) or not all(_is_session(node, a) for a in node.names):
            return None  # the statement also imports other names (kept by libcst's rewrite)
        bound = {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
        if "__all__" in index.text and set(bound) & exported_names(index):
            return None  # a re-export: libcst's rewrite keeps it
        alias = _fast.free_alias(index, "train")
        edits = _fast.Edits(index)
        found = []
        bases: set[int] = set()
        for item, function in calls:
            call, func = item.node, item.node.func  # type: ignore[attr-defined]
            base = func.value if isinstance(func, ast.Attribute) else func
            if not isinstance(base, ast.Name) or base.id not in bound or bound[base.id] not in index.qualified(base):
                return None
            if (call.lineno, call.col_offset) != (func.lineno, func.col_offset):
                return None  # a parenthesized callee: libcst drops the parentheses
            old = index.source(func)
            if old != (f"{base.id}.{func.attr}" if isinstance(func, ast.Attribute) else base.id):
                return None
            if function in TUNE_SESSION_FUNCTIONS and roles_of(index).of(item.functions) == "tune":
                return None
            target = f"{alias}.{SESSION_FUNCTIONS[function]}"
            edits.replace(func, target)
            bases.add(id(base))
            line_number, column = index.position(call)
            found.append(Diagnostic(self.code, line_number, column, f"`{old}(...)` -> `{target}(...)`", True))
        for name in bound:  # bound once (by the import), or libcst decides
            spelled = _fast.words(index.text, name)
            if spelled != 1 + sum(1 for item, _ in calls if _base_id(item.node) == name) and index.bindings[name] != 1:
                return None
        train_import = "from ray import train" + ("" if alias == "train" else f" as {alias}")
        if any(type(i.node) is ast.Name and i.node.id in bound and id(i.node) not in bases for i in index.nodes):
            # a session name used as a value (RTM100 flags it): its import stays, train's goes below
            edits.add_line_after(line, train_import)
        else:
            edits.replace(node, train_import)  # the train import takes over the line (and its comment)
        self.diagnostics += found
        return edits.apply()

    def apply(self, wrapper: MetadataWrapper) -> cst.Module:
        from migrate.rules._cst import session_calls

        return session_calls.apply(self, wrapper)


def _base_id(call: ast.expr) -> str | None:
    """``session`` for ``session.report(...)``, ``report`` for ``report(...)``."""
    func = call.func if isinstance(call, ast.Call) else call
    base = func.value if isinstance(func, ast.Attribute) else func
    return base.id if isinstance(base, ast.Name) else None


def _is_session(node: ast.ImportFrom, alias: ast.alias) -> bool:
    """``alias`` of ``from <module> import ...`` names a session module or a session function."""
    module = node.module or ""
    name = alias.name
    return f"{module}.{name}" in SESSION_MODULES or (module in SESSION_MODULES and name in SESSION_FUNCTIONS)


def _binds_session(node: ast.Import | ast.ImportFrom) -> bool:
    """The statement imports a session module or function (what libcst's ``_Collect`` counts)."""
    if isinstance(node, ast.Import):
        return any(a.name in SESSION_MODULES for a in node.names)
    return node.level == 0 and node.module is not None and any(_is_session(node, a) for a in node.names)
