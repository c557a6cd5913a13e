"""Findings as text, JSON, GitHub Actions annotations or SARIF 2.1.0 (``--output-format``).

Which findings are reported: flags always; rewrites only when they are pending
(``--diff``/``--check``: the file would change); files that could not be processed always.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from migrate.config import FORMATS
from migrate.engine import FileResult
from migrate.rules import BY_CODE, Diagnostic
from migrate.severity import MEANING

__all__ = ["FORMATS", "github", "render", "sarif"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
PROJECT_URL = "https://github.com/ray-train-compat/ray-train-compat"


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    col: int
    code: str
    message: str
    kind: str  # "flag", "fix" (pending rewrite) or "error"
    severity: str | None  # None for a file that could not be processed


def severity_of(d: Diagnostic) -> str | None:
    """A finding's severity: its own when milder than its rule's, else its rule's; None for
    what is no rule's finding (a notebook cell that does not parse: an error)."""
    rule = BY_CODE.get(d.code)
    return d.severity or (rule.severity if rule is not None else None)


# GitHub's annotation levels and SARIF's result levels, by severity: what raises is an error,
# what changes results quietly a warning, the rest a note.
GITHUB_LEVELS = {"breaks": "error", "silent": "warning", "warns": "notice", "fix": "notice", None: "error"}
SARIF_LEVELS = {"breaks": "error", "silent": "warning", "warns": "note", "fix": "note", None: "error"}


def findings(results: Sequence[FileResult], *, pending_fixes: bool) -> Iterator[Finding]:
    for r in results:
        for d in r.diagnostics:
            if d.fixed and not pending_fixes:
                continue
            yield Finding(r.path, d.line, d.col, d.code, d.message, "fix" if d.fixed else "flag", severity_of(d))
        if r.error:
            yield Finding(r.path, r.error_line, r.error_col, "ERROR", r.error, "error", None)


def render(fmt: str, results: Sequence[FileResult], *, pending_fixes: bool) -> str:
    if fmt == "json":
        return to_json(results)
    if fmt == "github":
        return "\n".join(github(f) for f in findings(results, pending_fixes=pending_fixes))
    if fmt == "sarif":
        return json.dumps(sarif(list(findings(results, pending_fixes=pending_fixes))), indent=2)
    raise ValueError(f"unknown output format {fmt!r}; one of {', '.join(FORMATS)}")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(f: Finding) -> str:
    """One GitHub Actions workflow command: an annotation on the file's line in the PR."""
    level = GITHUB_LEVELS[f.severity]
    title = f"migrate {f.code} ({f.severity})" if f.severity else f"migrate ({f.code})"
    properties = f"title={_escape_property(title)},file={_escape_property(f.path)},line={f.line},col={f.col}"
    return f"::{level} {properties}::{_escape_data(text_line(f))}"


def text_line(f: Finding) -> str:
    """A finding as the text format prints it: ``path:line:col: CODE [severity] message``."""
    marker = f" [{f.severity}]" if f.severity else ""
    return f"{f.path}:{f.line}:{f.col}: {f.code}{marker} {f.message}"


def sarif(found: list[Finding]) -> dict[str, object]:
    """A SARIF 2.1.0 log (GitHub code scanning's upload-sarif reads it)."""
    codes = sorted({f.code for f in found if f.code in BY_CODE})
    rules = [
        {
            "id": code,
            "name": BY_CODE[code].name,
            "shortDescription": {"text": BY_CODE[code].summary},
            "helpUri": rule_url(code),
            "properties": {
                "fixSafety": BY_CODE[code].fix_safety,
                "severity": BY_CODE[code].severity,
                "severityMeaning": MEANING[BY_CODE[code].severity],
            },
            "defaultConfiguration": {"level": SARIF_LEVELS[BY_CODE[code].severity]},
        }
        for code in codes
    ]
    results = [
        {
            "ruleId": f.code,
            "level": SARIF_LEVELS[f.severity],
            "properties": {"severity": f.severity or "error"},
            "message": {"text": f.message + (" (fixable: run python -m migrate)" if f.kind == "fix" else "")},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.path)},
                        "region": {"startLine": f.line, "startColumn": f.col},
                    }
                }
            ],
        }
        for f in found
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "ray-train-migrate", "informationUri": PROJECT_URL, "rules": rules}},
                "results": results,
            }
        ],
    }


def _uri(path: str) -> str:
    relative = os.path.relpath(path) if os.path.isabs(path) else path
    return relative.replace(os.sep, "/").removeprefix("./")


def to_json(results: Sequence[FileResult]) -> str:
    rows = []
    for r in results:
        for d in r.diagnostics:
            rows.append({"code": d.code, "file": r.path, "line": d.line, "col": d.col, "message": d.message,
                         "fixed": d.fixed, "severity": severity_of(d), "url": rule_url(d.code)})  # fmt: skip
        if r.error:
            rows.append({"code": "ERROR", "file": r.path, "line": r.error_line, "col": r.error_col,
                         "message": r.error, "fixed": False, "severity": None, "url": None})  # fmt: skip
    return json.dumps(rows, indent=2)


DOCS_URL = "docs/rules.md"


def rule_url(code: str) -> str:
    """Where a rule is documented (the generated rule reference, one anchor per code)."""
    return f"{DOCS_URL}#{code.lower()}"
