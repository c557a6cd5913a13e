from __future__ import annotations

import textwrap

import pytest

from migrate import engine
from migrate.rules import BY_CODE, Context, Diagnostic


def migrate(source: str, *codes: str, target: str = "ray") -> tuple[str, list[Diagnostic]]:
    """Run the named rules (all rules of the target when none are named) on dedented source."""
    rules = [BY_CODE[c] for c in codes] if codes else engine.select_rules(target=target)
    return engine.migrate_source(textwrap.dedent(source), rules, Context(target=target))  # type: ignore[arg-type]


@pytest.fixture
def run():
    return migrate
