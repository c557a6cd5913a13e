"""The rewriting rules' libcst forms, and what they share.

Imported only when a file needs a libcst form (:meth:`migrate.rules.Rule.apply`): the
fast forms and the flag rules run on ``ast``, and a run that never needs libcst never pays
its import (most of the codemod's start-up time).
"""

from __future__ import annotations

from typing import Any, ClassVar

import libcst as cst
from libcst.metadata import BaseMetadataProvider, PositionProvider, QualifiedNameProvider

from migrate.rules._base import Diagnostic, Rule


class _Reports(cst.MetadataDependent):
    rule: Rule

    def report(self, node: cst.CSTNode, message: str, *, fixed: bool) -> None:
        start = self.get_metadata(PositionProvider, node).start
        self.rule.diagnostics.append(Diagnostic(self.rule.code, start.line, start.column + 1, message, fixed))


class RuleVisitor(_Reports, cst.CSTTransformer):
    """A transformer with position metadata and :meth:`report`."""

    METADATA_DEPENDENCIES: ClassVar[tuple[type[BaseMetadataProvider[Any]], ...]] = (PositionProvider,)

    def __init__(self, rule: Rule) -> None:
        super().__init__()
        self.rule = rule


def qualified(visitor: cst.MetadataDependent, node: cst.CSTNode) -> set[str]:
    """libcst's qualified names of ``node`` (for the rewriting rules, which run on libcst)."""
    return {q.name for q in visitor.get_metadata(QualifiedNameProvider, node, set())}
