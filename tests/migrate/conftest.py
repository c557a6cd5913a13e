from __future__ import annotations

import textwrap

import pytest

from migrate import engine
from migrate.rules import BY_CODE, Context, Diagnostic


def migrate(source: str, *codes: str, target: str = "ray") -> tuple[str, list[Diagnostic]]:
    """Run the named rules (all rules of the target when none are named) on dedented source.

    Every call also runs the rules with their libcst forms only and checks the result is
    the same: each before/after test of the codemod is a test of the fast path too."""
    rules = [BY_CODE[c] for c in codes] if codes else engine.select_rules(target=target)
    text, context = textwrap.dedent(source), Context(target=target)  # type: ignore[arg-type]
    result = engine.migrate_source(text, rules, context)
    assert result == engine.migrate_source(text, rules, context, fast=False), "the fast path differs from libcst"
    return result


@pytest.fixture
def run():
    return migrate


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The codemod's tests do not depend on RAY_TRAIN_V2_ENABLED (they start no Ray, or pin
    the mode themselves): scripts/test.sh runs them in its first pass only. A test that runs
    migrated code in the pass's mode is marked ``ray`` and runs in both."""
    for item in items:
        if "tests/migrate/" in item.nodeid and item.get_closest_marker("ray") is None:
            item.add_marker(pytest.mark.one_pass)
