"""The libcst side of import planning: which name reaches ``ray.train`` without clashing,
and where its import goes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, Scope, ScopeProvider

from migrate._imports import choose_alias as choose_alias  # the rules' libcst forms use both
from migrate._imports import member as member


def scopes(resolved: Mapping[Any, object]) -> set[Scope]:
    """The distinct scopes in a resolved ``ScopeProvider`` mapping."""
    return {s for s in resolved.values() if isinstance(s, Scope)}


def binding_counts(wrapper: MetadataWrapper) -> Counter[str]:
    """How many times each name is bound anywhere in the module (any scope)."""
    counts: Counter[str] = Counter()
    for scope in scopes(wrapper.resolve(ScopeProvider)):
        for assignment in scope.assignments:
            counts[assignment.name] += 1
    return counts


def used_names(module: cst.Module) -> set[str]:
    """Every identifier the module binds or reads (not attribute names or import paths)."""
    names: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Import(self, node: cst.Import) -> bool:
            names.update((a.evaluated_alias or a.evaluated_name).split(".")[0] for a in node.names)
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            if not isinstance(node.names, cst.ImportStar):
                names.update(a.evaluated_alias or a.evaluated_name for a in node.names)
            return False

    module.visit(Collect())
    return names


def existing_train_alias(module: cst.Module, counts: Counter[str]) -> str | None:
    """A module-level ``from ray import train [as x]`` / ``import ray.train as x`` not rebound."""
    return existing_alias(module, counts, "train")


def existing_alias(module: cst.Module, counts: Counter[str], submodule: str) -> str | None:
    """A module-level ``from ray import <submodule> [as x]`` / ``import ray.<submodule> as x`` not rebound."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            alias = _binding(small, submodule)
            if alias is not None and counts[alias] == 1:
                return alias
    return None


def _binding(small: cst.BaseSmallStatement, submodule: str) -> str | None:
    if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
        if get_full_name_for_node(small.module) == "ray" and not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                if get_full_name_for_node(alias.name) == submodule:
                    return alias.evaluated_alias or submodule
    if isinstance(small, cst.Import):
        for alias in small.names:
            if get_full_name_for_node(alias.name) == f"ray.{submodule}" and alias.asname is not None:
                return alias.evaluated_alias
    return None


def train_import(alias: str) -> cst.SimpleStatementLine:
    return module_import("train", alias)


def module_import(submodule: str, alias: str) -> cst.SimpleStatementLine:
    """``from ray import <submodule> [as <alias>]``."""
    suffix = "" if alias == submodule else f" as {alias}"
    statement = cst.parse_statement(f"from ray import {submodule}{suffix}\n")
    assert isinstance(statement, cst.SimpleStatementLine)
    return statement


def insert_after_imports(module: cst.Module, statements: Sequence[cst.SimpleStatementLine]) -> cst.Module:
    """Insert after the last top-level import (after the docstring and __future__ at least)."""
    body = list(module.body)
    position = 0
    for i, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
        ):
            position = i + 1
        elif i == 0 and _is_docstring(statement):
            position = 1
    return module.with_changes(body=[*body[:position], *statements, *body[position:]])


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def fix_empty_blocks(module: cst.Module) -> cst.Module:
    """Give every indented block that lost all its statements a ``pass``."""

    class Fill(cst.CSTTransformer):
        def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
            if not updated.body:
                return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
            return updated

    return module.visit(Fill())


def with_commas(aliases: list[cst.ImportAlias], like: cst.CSTNode | None = None) -> list[cst.ImportAlias]:
    """``a, b, c``: a comma and a space after every alias but the last; or, when ``like`` (the
    import the aliases go into) is parenthesized one name per line (black's form), one per
    line again, each with its comma and any comment it had, and ``)`` on a line of its own."""
    indent = _one_per_line(like)
    if indent is not None:
        return [_on_its_own_line(a, indent, last=i == len(aliases) - 1) for i, a in enumerate(aliases)]
    last = len(aliases) - 1
    return [
        a.with_changes(
            comma=cst.MaybeSentinel.DEFAULT if i == last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        for i, a in enumerate(aliases)
    ]


def _one_per_line(node: cst.CSTNode | None) -> str | None:
    """The names' indentation when ``node`` is ``from m import (`` with the names on the lines
    after it, else None."""
    if not isinstance(node, cst.ImportFrom) or node.lpar is None:
        return None
    after = node.lpar.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        return after.last_line.value
    return None


def _on_its_own_line(alias: cst.ImportAlias, indent: str, *, last: bool) -> cst.ImportAlias:
    """``alias`` followed by a comma and a line break: to the next name's indentation, or
    (``last``) to the closing parenthesis at the statement's."""
    comma = alias.comma
    kept = comma.whitespace_after if isinstance(comma, cst.Comma) else None
    first_line = kept.first_line if isinstance(kept, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
    empty_lines = kept.empty_lines if isinstance(kept, cst.ParenthesizedWhitespace) else ()
    return alias.with_changes(
        comma=cst.Comma(
            whitespace_after=cst.ParenthesizedWhitespace(
                first_line=first_line,  # a comment after the name stays with it
                empty_lines=empty_lines,
                indent=True,
                last_line=cst.SimpleWhitespace("" if last else indent),
            )
        )
    )


def without_trailing_semicolon(body: list[cst.BaseSmallStatement]) -> list[cst.BaseSmallStatement]:
    """Statements joined by ``;`` on one line: no semicolon after the last one."""
    return [
        s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) if i == len(body) - 1 else s for i, s in enumerate(body)
    ]


def exported_names(module: cst.Module) -> set[str]:
    """The strings of a module-level ``__all__ = [...]`` / ``(...)`` (and ``+=`` forms)."""
    names: set[str] = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            targets: list[cst.BaseExpression] = []
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                targets = [small.target]
            if not any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets):
                continue
            value = getattr(small, "value", None)
            if isinstance(value, (cst.List, cst.Tuple)):
                for element in value.elements:
                    if isinstance(element.value, cst.SimpleString) and isinstance(element.value.evaluated_value, str):
                        names.add(element.value.evaluated_value)
    return names


def _plain_import(statement: cst.BaseStatement) -> str | None:
    """``X`` of a top-level line that is exactly ``import X`` (one name, no alias, no comment)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, cst.Import) or len(small.names) != 1 or small.names[0].asname is not None:
        return None
    if statement.trailing_whitespace.comment is not None:
        return None
    return get_full_name_for_node(small.names[0].name)


def without_added_duplicates(before: cst.Module, after: cst.Module) -> cst.Module:
    """``after`` (a rule's output for ``before``) without the top-level ``import X`` lines the rule
    added where the module already had one: ``import ray.air`` leaves ``import ray`` (it bound
    ``ray``), which beside an ``import ray`` is pyflakes' "redefinition of unused". The first
    ones stay; a duplicate the input had is the user's, and stays too."""
    had = Counter(name for s in before.body if (name := _plain_import(s)) is not None)
    now = Counter(name for s in after.body if (name := _plain_import(s)) is not None)
    extra = {name: n - max(had[name], 1) for name, n in now.items() if n > max(had[name], 1)}
    if not extra:
        return after
    body = list(after.body)
    for index in range(len(body) - 1, -1, -1):
        name = _plain_import(body[index])
        if name is not None and extra.get(name, 0) > 0:
            extra[name] -= 1
            del body[index]
    return after.with_changes(body=body)
