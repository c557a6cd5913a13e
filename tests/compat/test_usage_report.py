"""What ``result.migration_report()`` says of each V1-only behaviour: how bad it is on raw V2,
worst first, and the codemod rule that finds it; the runtime's severities are the codemod's."""

from __future__ import annotations

from compat_core.migration import v1_only
from compat_core.migration.usage import Usage
from compat_core.semantics.result import Result
from migrate.rules import BY_CODE
from migrate.severity import SEVERITIES


def test_every_behaviour_has_the_severity_of_the_codemod_rule_that_finds_it() -> None:
    assert v1_only.SEVERITY_ORDER == SEVERITIES
    for kind in v1_only.KINDS.values():
        assert kind.severity in ("breaks", "silent", "warns"), kind.code
        if kind.rule is None:
            continue
        rule = BY_CODE[kind.rule]
        if rule.fix_safety == "none":  # a flag rule: the same judgement of the same code
            assert kind.severity == rule.severity, kind.code
    assert v1_only.KINDS["free-floating-report"].rule == "RTM101"


def test_the_report_lists_the_worst_first_with_its_rule() -> None:
    usage = [
        Usage("free-floating-report", 3, "job.py:5"),
        Usage("rerun-same-name", 1, "job.py:20"),
        Usage("trial-api", 1, "job.py:9"),
    ]
    report = Result(
        backend="v1", metrics=None, checkpoint=None, error=None, path="/runs/x", v1_usage=usage
    ).migration_report()
    lines = report.splitlines()
    assert lines[0].endswith("worst first:")
    assert lines[1] == "  trial-api [breaks]: 1x, first at job.py:9; python -m migrate: RTM111"
    assert lines[3] == "  free-floating-report [silent]: 3x, first at job.py:5; python -m migrate: RTM101"
    assert lines[5] == "  rerun-same-name [silent]: 1x, first at job.py:20"  # no rule: a run's history, not code
    assert lines[-1].startswith("[breaks]: raw V2 raises on it")
