from __future__ import annotations

import textwrap
from collections import Counter

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


# The road a team takes: each target alone, and compat followed by native.
ROADS = (("ray",), ("compat",), ("native",), ("compat", "native"))


def unreported_after_write(source: str, road: tuple[str, ...]) -> list[str]:
    """Write ``source`` along ``road`` (each target's rules in turn, as ``python -m migrate
    --target T`` would), then check the output with the last target's rules: what the check
    finds that the last write did not report at that line (the write's findings point at the
    written text). Also asserts that each write reaches its fixed point."""
    text, reported = textwrap.dedent(source), []
    for target in road:
        rules, context = engine.select_rules(target=target), Context(target=target)  # type: ignore[arg-type]
        text, reported = engine.migrate_source(text, rules, context, lines_of="output")
        again, found = engine.migrate_source(text, rules, context)
        assert again == text, f"--target {target}: a second run changed the output of the first:\n{text}"
    left = Counter((d.code, d.line) for d in found if not d.fixed)
    left.subtract(Counter((d.code, d.line) for d in reported if not d.fixed))
    return [f"{code} at line {line}" for (code, line), n in sorted(left.items()) if n > 0]
