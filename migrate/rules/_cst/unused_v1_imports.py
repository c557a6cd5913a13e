"""The libcst form of :mod:`migrate.rules.unused_v1_imports` (imported when a file needs it)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from migrate.rules._base import Diagnostic, Rule
from migrate.rules._cst import imports as _imports
from migrate.rules._names import exported as exported_names
from migrate.rules._names import is_v1

if TYPE_CHECKING:  # a form needs only what every rule has: no import of its rule module
    from migrate.rules._base import Rule


# A comment that is only a suppression directive (the bare word, or with codes such as F401).
_NOQA_ONLY = re.compile(r"#\s*(?i:noqa)(?::\s*[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*)?\s*$")


def apply(rule: Rule, wrapper: MetadataWrapper, declared: dict[int, set[str]]) -> cst.Module:
    """``declared``: by an import's first line, the names marked as deliberate (kept)."""
    if rule.context.path.endswith(("__init__.py", "__init__.pyi")):
        return wrapper.module
    exported = exported_names(rule.index_of(wrapper))
    unused: set[tuple[int, str]] = set()
    for scope in _imports.scopes(wrapper.resolve(ScopeProvider)):
        for assignment in scope.assignments:
            node = getattr(assignment, "node", None)
            if not isinstance(node, (cst.Import, cst.ImportFrom)) or assignment.references:
                continue
            if assignment.name in exported or not _binds_v1(node, assignment.name):
                continue
            if sum(1 for a in scope.assignments if a.name == assignment.name and a.references):
                continue  # the name is bound again and used: leave the import to a person
            unused.add((id(node), assignment.name))
    if not unused:
        return wrapper.module
    lines = {
        id(node): position.start.line
        for node, position in wrapper.resolve(PositionProvider).items()
        if isinstance(node, (cst.Import, cst.ImportFrom))
    }
    unused = {(node, name) for node, name in unused if name not in declared.get(lines.get(node, 0), ())}
    if not unused:
        return wrapper.module
    return _imports.fix_empty_blocks(wrapper.module.visit(_Remove(rule, unused, lines)))


def _binds_v1(node: cst.Import | cst.ImportFrom, name: str) -> bool:
    if isinstance(node, cst.Import):
        return any(a.asname is not None and a.evaluated_alias == name and is_v1(a.evaluated_name) for a in node.names)
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return False
    module = get_full_name_for_node(node.module) or ""
    return any(
        (a.evaluated_alias or a.evaluated_name) == name and is_v1(f"{module}.{a.evaluated_name}") for a in node.names
    )


class _Remove(cst.CSTTransformer):
    """Drop the unused names; decisions use the original nodes (their identity is what the
    scope analysis saw), output is built from the updated ones, which correspond 1:1."""

    def __init__(self, rule: Rule, unused: set[tuple[int, str]], lines: dict[int, int]) -> None:
        super().__init__()
        self.rule = rule
        self.unused = unused
        self.lines = lines

    def _prune(self, original: cst.BaseStatement, updated: cst.BaseStatement) -> cst.BaseStatement | None:
        """The statement without its unused V1 import names (None: nothing left)."""
        if not isinstance(original, cst.SimpleStatementLine) or not isinstance(updated, cst.SimpleStatementLine):
            return updated
        body: list[cst.BaseSmallStatement] = []
        changed = False
        for old, new in zip(original.body, updated.body, strict=True):
            if isinstance(old, (cst.Import, cst.ImportFrom)) and isinstance(new, (cst.Import, cst.ImportFrom)):
                if not isinstance(old.names, cst.ImportStar) and not isinstance(new.names, cst.ImportStar):
                    keep = [(id(old), a.evaluated_alias or a.evaluated_name) not in self.unused for a in old.names]
                    if not all(keep):
                        changed = True
                        dropped = [a for a, k in zip(old.names, keep, strict=True) if not k]
                        names = ", ".join(  # one line, whatever the layout of the import
                            a.evaluated_name if a.asname is None else f"{a.evaluated_name} as {a.evaluated_alias}"
                            for a in dropped
                        )
                        message = f"unused V1 import removed: `{names}`"
                        line = self.lines.get(id(old), 1)
                        self.rule.diagnostics.append(Diagnostic(self.rule.code, line, 1, message, True))
                        kept = [a for a, k in zip(new.names, keep, strict=True) if k]
                        if not kept:
                            continue
                        new = new.with_changes(names=_imports.with_commas(kept, like=new))
            body.append(new)
        if not changed:
            return updated
        if not body:
            return None
        return updated.with_changes(body=_imports.without_trailing_semicolon(body))

    def _block(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        out: list[cst.BaseStatement] = []
        carry: list[cst.EmptyLine] = []
        for old, statement in zip(original, updated, strict=True):
            new = self._prune(old, statement)
            if new is None:
                assert isinstance(statement, cst.SimpleStatementLine)
                carry += [line for line in statement.leading_lines if line.comment is not None]
                comment = statement.trailing_whitespace.comment
                if comment is not None and not _NOQA_ONLY.match(comment.value):  # a directive goes with its line
                    carry.append(cst.EmptyLine(comment=comment))
                continue
            if carry:
                new = new.with_changes(leading_lines=[*carry, *new.leading_lines])  # type: ignore[attr-defined]
                carry = []
            out.append(new)
        return out, carry

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body, carry = self._block(original_node.body, updated_node.body)
        return updated_node.with_changes(body=body, footer=[*carry, *updated_node.footer])

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body, carry = self._block(original_node.body, updated_node.body)
        return updated_node.with_changes(body=body, footer=[*carry, *updated_node.footer])
