"""Rule documentation, generated from the rules themselves: ``python -m migrate.docs``."""

from __future__ import annotations

import inspect
import re
import sys

from migrate.rules import RULES, Rule
from migrate.severity import MEANING, SEVERITIES
from migrate.tables import GUIDE

SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")


def sections(rule: type[Rule]) -> dict[str, str]:
    """The docstring split into its five sections (every rule must have all of them)."""
    doc = inspect.getdoc(rule) or ""
    parts = re.split(r"^## (.+)$", doc, flags=re.MULTILINE)
    found = {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    missing = [s for s in SECTIONS if s not in found]
    if missing:
        raise ValueError(f"{rule.code} docstring lacks sections {missing}")
    return found


def code_block(text: str) -> str:
    match = re.search(r"```python\n(.*?)```", text, flags=re.DOTALL)
    if match is None:
        raise ValueError("no ```python block")
    return match.group(1)


def render() -> str:
    lines = [
        "# Rules of `python -m migrate`",
        "",
        "<!-- docs-test: fragments: each Example and Use instead goes through the codemod in"
        " tests/migrate/test_rule_docs.py -->",
        "",
        "Generated from the rule classes by `python -m migrate.docs > docs/rules.md`; a test keeps",
        f"this file in sync. Migration guide: {GUIDE}",
        "",
        "Fix rules rewrite code; flag rules (fix safety `none`) only report. Rules run in the order",
        "below; see `migrate/rules/__init__.py` for why.",
        "",
        "Every finding has a severity: what it does to the program the day `RAY_TRAIN_V2_ENABLED`",
        "flips, worst first (`--fail-on SEVERITY` exits 1 only for that severity or worse). A rule's",
        "severity is the worst its findings have; a milder finding says so in every output format.",
        "",
        *(f"- **{s}**: {MEANING[s]}" for s in SEVERITIES),
        "",
        "| code | name | fix | severity | summary |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rule in RULES:
        link = f"[{rule.code}](#{rule.code.lower()})"
        lines.append(f"| {link} | `{rule.name}` | {rule.fix_safety} | {rule.severity} | {rule.summary} |")
    for rule in RULES:
        parts = sections(rule)
        target = " (only with `--target compat`)" if rule.targets == ("compat",) else ""
        lines += [
            "",
            f"## {rule.code}",
            "",
            f"`{rule.name}`{target}: {rule.summary}. Fix safety: **{rule.fix_safety}**. Severity: **{rule.severity}**.",
        ]
        for title in SECTIONS:
            lines += ["", f"### {title}", "", parts[title]]
        if rule.code == "RTM128":
            lines += catalogue_table()
    return "\n".join(lines) + "\n"


def catalogue_table() -> list[str]:
    """The catalogue RTM128 (and RTM100, for ``ray.air``) read: every name, the releases that
    shipped it, and what replaces it."""
    from migrate import catalogue

    rows = catalogue.entries()
    lines = [
        "",
        "### The catalogue",
        "",
        f"Read from Ray's releases {catalogue.RELEASES[0]} to {catalogue.NEWEST} ({len(catalogue.RELEASES)} releases, "
        "the newest patch of each minor) by `scripts/ray_api_catalogue.py`, held against "
        f"{catalogue.NEWEST}'s V2 API; the advice is `migrate/catalogue/advice.py`. {len(rows)} names: "
        + ", ".join(f"{sum(e.status == s for e in rows)} {s}" for s in ("moved", "moved-late", "removed", "changed"))
        + ". Names under `ray.air` and the session modules are reported by RTM100 with the same advice.",
        "",
        "| name | shipped | instead |",
        "| --- | --- | --- |",
    ]
    for entry in rows:
        shipped = "still, as V1's" if entry.status == "changed" else f"{entry.first}-{entry.last}"
        lines.append(f"| `{entry.name}` | {shipped} | {entry.instead.replace('|', '/')} |")
    return lines


if __name__ == "__main__":
    sys.stdout.write(render())
