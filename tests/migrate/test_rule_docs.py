"""Every rule's documentation: complete, generated into docs/rules.md, and true."""

from pathlib import Path

import pytest

from migrate import docs, engine
from migrate.rules import RULES, Context

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_example_yields_use_instead(rule) -> None:
    parts = docs.sections(rule)
    example, use_instead = docs.code_block(parts["Example"]), docs.code_block(parts["Use instead"])
    target = rule.targets[0]
    # RTM900 judges the other rules' findings: it runs with all of them.
    rules = engine.select_rules(target=target) if rule.code == "RTM900" else [rule]
    out, found = engine.migrate_source(example, rules, Context(target=target))
    if rule.fix_safety == "none":  # flag rules: the example is flagged, its replacement is not
        assert out == example
        assert [d.code for d in found] and all(d.code == rule.code and not d.fixed for d in found)
        assert engine.migrate_source(use_instead, rules, Context(target=target))[1] == []
    else:
        assert out == use_instead
        assert found and all(d.fixed for d in found)


def test_codes_are_unique_and_stable() -> None:
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))
    assert all(c.startswith("RTM") and len(c) == 6 for c in codes)


def test_docs_rules_md_is_generated_from_the_rules() -> None:
    assert (ROOT / "docs" / "rules.md").read_text() == docs.render(), "run: python -m migrate.docs > docs/rules.md"
