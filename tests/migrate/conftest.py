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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The codemod's tests do not depend on RAY_TRAIN_V2_ENABLED (they start no Ray, or pin
    the mode themselves): scripts/test.sh runs them in its first pass only. A test that runs
    migrated code in the pass's mode is marked ``ray`` and runs in both."""
    for item in items:
        if "tests/migrate/" in item.nodeid and item.get_closest_marker("ray") is None:
            item.add_marker(pytest.mark.one_pass)
