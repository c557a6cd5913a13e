"""The fleet's readiness as terminal tables (rich), JSON, Markdown, CSV and one self-contained
HTML file with a trend chart per behaviour. The JSON's schema is docs/readiness.md's."""

from __future__ import annotations

import csv
import html
import io
import json
import shutil
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from compat.readiness._collect import Source
from compat.readiness._fleet import (
    Fleet,
    Job,
    plural,
    severity_counts,
    source_blockers,
    source_ready,
    source_status,
    worst_of,
)
from compat.readiness._record import SEVERITIES

SCHEMA = "ray-train-compat/readiness-report"
VERSION = 1
SPARKS = "▁▂▃▄▅▆▇█"
STYLES = {"breaks": "bold red", "silent": "yellow", "warns": "cyan", "fix": "green", None: "dim"}
COLORS = ["#d62728", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]


def when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M")


def spark(values: tuple[int, ...]) -> str:
    top = max(values, default=0)
    if top == 0:
        return SPARKS[0] * len(values)
    return "".join(SPARKS[round(v / top * (len(SPARKS) - 1))] for v in values)


def counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in counts.items()) or "-"


def summary(fleet: Fleet) -> dict[str, Any]:
    def of(items: tuple[Any, ...], ready: Any) -> dict[str, int]:
        done = sum(1 for i in items if ready(i))
        return {"total": len(items), "ready": done, "blocked": len(items) - done}

    return {
        "jobs": of(fleet.jobs, lambda j: j.ready),
        "repositories": of(fleet.repositories, source_ready),
        "packages_blocking": len(fleet.packages),
        "packages_read": fleet.packages_read,
        "worst": fleet.worst,
        "problems": len(fleet.problems),
    }


def summary_line(fleet: Fleet) -> str:
    s = summary(fleet)
    parts = []
    if s["jobs"]["total"]:
        parts.append(f"{s['jobs']['ready']} of {s['jobs']['total']} jobs ready")
    if s["repositories"]["total"]:
        parts.append(f"{s['repositories']['ready']} of {s['repositories']['total']} repositories ready")
    if fleet.packages_read is not None:
        blocking = len(fleet.packages)
        verb = "blocks" if blocking == 1 else "block"
        parts.append(f"{blocking} of {plural(fleet.packages_read, 'installed package')} {verb} the flip")
    if fleet.nothing_read:
        parts = ["nothing read: no run's record, source file or installed package"]
        verdict = "no verdict"
    else:
        verdict = f"worst: {fleet.worst}" if fleet.worst else "nothing blocks the flip"
    if fleet.problems:
        verdict += f"; {plural(len(fleet.problems), 'path')} not read"
    return f"{'; '.join(parts)} ({verdict})"


# ---- JSON -------------------------------------------------------------------------------


def job_json(job: Job) -> dict[str, Any]:
    latest = job.latest
    return {
        "job": job.name,
        "ready": job.ready,
        "worst": job.worst,
        "blockers": [
            {"kind": b.kind, "severity": b.severity, "count": b.count, "first_site": b.first_site, "rule": b.rule}
            for b in job.blockers
        ],
        "source_blockers": [
            {"path": f.path, "line": f.line, "code": f.code, "severity": f.severity} for f in job.source_blockers
        ],
        "why": job.why,
        "severities": severity_counts([*job.blockers, *job.source_blockers]),
        "runs": len(job.runs),
        "last_run": {
            "run": latest.run,
            "path": latest.path,
            "ended_at": latest.to_json()["ended_at"],
            "outcome": latest.outcome,
            "mode": latest.mode,
            "engine": latest.engine,
            "ray": latest.ray_version,
            "script": latest.script,
            "call_site": latest.call_site,
        },
        "trend": list(job.trend),
    }


def source_json(source: Source) -> dict[str, Any]:
    blockers = source_blockers(source)
    return {
        "name": source.name,
        "path": source.path,
        **({"version": source.version} if source.kind == "package" else {}),
        "ready": source_ready(source),
        "status": source_status(source),
        "worst": worst_of([f.severity for f in blockers]),
        "files": source.files,
        "severities": severity_counts(blockers),
        "findings": [
            {"path": f.path, "line": f.line, "col": f.col, "code": f.code, "severity": f.severity, "message": f.message}
            for f in source.findings
        ],
    }


def to_json(fleet: Fleet) -> str:
    days, series = fleet.trend()
    report = {
        "schema": SCHEMA,
        "version": VERSION,
        "generated_at": datetime.fromtimestamp(fleet.generated_at, timezone.utc).isoformat(timespec="seconds"),
        "summary": summary(fleet),
        "fix_first": [
            {
                "key": b.key,
                "severity": b.severity,
                "rule": b.rule,
                "kinds": list(b.kinds),
                "jobs": list(b.jobs),
                "repositories": list(b.repositories),
                "packages": list(b.packages),
                "fix": b.fix,
            }
            for b in fleet.blockers
        ],
        "jobs": [job_json(j) for j in fleet.jobs],
        "repositories": [source_json(s) for s in fleet.repositories],
        "packages": [source_json(s) for s in fleet.packages],
        "trend": {"days": days, "behaviours": series},
        "problems": [{"path": p.path, "message": p.message} for p in fleet.problems],
    }
    return json.dumps(report, indent=2)


# ---- rows shared by the tables ----------------------------------------------------------


def _ranked_jobs(fleet: Fleet) -> list[Job]:
    """Blocked jobs first, worst first, then by name; ready jobs after them."""
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(fleet.jobs, key=lambda j: (j.ready, order.get(j.worst or "", 9), j.name))


def job_blockers(job: Job) -> str:
    found = [f"{b.kind} {b.count}x" for b in job.blockers]
    found += [f"{f.code} (source)" for f in job.source_blockers]
    return ", ".join(found) or "-"


def job_row(job: Job) -> list[str]:
    latest = job.latest
    return [
        job.name,
        "ready" if job.ready else f"blocked ({job.worst})",
        job_blockers(job),
        f"{when(latest.ended_at)} {latest.outcome} ({latest.mode})",
        spark(job.trend),
        job.why or "-",
    ]


def source_row(source: Source) -> list[str]:
    blockers = source_blockers(source)
    codes = sorted({f.code for f in blockers})
    shown = ", ".join(codes[:6]) + (", ..." if len(codes) > 6 else "")
    name = f"{source.name} {source.version}" if source.version else source.name
    return [name, source_status(source), counts_text(severity_counts(blockers)), shown or "-"]


def blocker_row(b: Any) -> list[str]:
    kinds = f" ({', '.join(b.kinds)})" if b.kinds and b.rule else ""
    return [b.severity, f"{b.key}{kinds}", str(len(b.jobs)), str(len(b.repositories)), str(len(b.packages)), b.fix]


JOB_HEADERS = ["job", "status", "blockers (latest run)", "last run", "trend", "runs and source disagree"]
SOURCE_HEADERS = ["name", "status", "findings", "rules"]
BLOCKER_HEADERS = ["severity", "what", "jobs", "repos", "packages", "how to fix"]


# ---- terminal ---------------------------------------------------------------------------


def to_text(fleet: Fleet, *, limit: int | None = 20, width: int | None = None) -> str:
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    if width is None:  # a terminal's own width; a file or a pipe gets 120 columns
        width = shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120
    console = Console(file=out, width=width, force_terminal=False, color_system=None, soft_wrap=False)
    out.write(f"Readiness to flip RAY_TRAIN_V2_ENABLED: {summary_line(fleet)}\n")  # whole: a CI log greps it

    def cut(rows: list[Any]) -> tuple[list[Any], int]:
        return (rows, 0) if limit is None or len(rows) <= limit else (rows[:limit], len(rows) - limit)

    def table(title: str, headers: list[str], rows: list[list[str]], hidden: int, styles: Sequence[str | None]) -> None:
        t = Table(title=title, title_justify="left", show_lines=False, expand=False)
        for header in headers:
            t.add_column(header, overflow="fold")
        for row, style in zip(rows, styles, strict=True):
            t.add_row(*row, style=style)
        console.print(t)
        if hidden:
            console.print(f"  ... and {hidden} more (--all shows every row; --format json/csv has them all)")

    if fleet.blockers:
        rows, hidden = cut(list(fleet.blockers))
        table(
            "Fix first",
            BLOCKER_HEADERS,
            [blocker_row(b) for b in rows],
            hidden,
            [STYLES[b.severity] for b in rows],
        )
    if fleet.jobs:
        ranked = _ranked_jobs(fleet)
        blocked = [j for j in ranked if not j.ready]
        if blocked:
            rows, hidden = cut(blocked)
            table("Jobs blocked", JOB_HEADERS, [job_row(j) for j in rows], hidden, [STYLES[j.worst] for j in rows])
        ready = [j.name for j in ranked if j.ready]
        names = f": {', '.join(ready[:limit] if limit else ready)}" if ready else ""
        more = f", ... and {len(ready) - limit} more" if limit and len(ready) > limit else ""
        console.print(f"Jobs ready: {len(ready)} (their latest run relied on no V1-only behaviour){names}{more}")
        for job in (j for j in ranked if j.ready and j.why):
            console.print(f"  {job.name}: ready by {job.why}")
    for title, sources in (("Repositories", fleet.repositories), ("Installed packages", fleet.packages)):
        if sources:
            ordered = sorted(sources, key=lambda s: (source_ready(s), s.name))
            rows, hidden = cut(ordered)
            styles = [STYLES[worst_of([f.severity for f in source_blockers(s)])] for s in rows]
            table(title, SOURCE_HEADERS, [source_row(s) for s in rows], hidden, styles)
    if fleet.problems:
        out.write("Not read (the rest is reported):\n")
        for problem in fleet.problems:  # whole lines: a path is copied from here
            out.write(f"  {problem.path}: {problem.message}\n")
    return out.getvalue()


# ---- Markdown ---------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def to_markdown(fleet: Fleet) -> str:
    parts = ["# Readiness to flip `RAY_TRAIN_V2_ENABLED`", "", summary_line(fleet) + "."]
    if fleet.blockers:
        parts += ["", "## Fix first", "", _md_table(BLOCKER_HEADERS, [blocker_row(b) for b in fleet.blockers])]
    if fleet.jobs:
        parts += ["", "## Jobs", "", _md_table(JOB_HEADERS, [job_row(j) for j in _ranked_jobs(fleet)])]
    for title, sources in (("Repositories", fleet.repositories), ("Installed packages", fleet.packages)):
        if sources:
            parts += ["", f"## {title}", "", _md_table(SOURCE_HEADERS, [source_row(s) for s in sources])]
    if fleet.problems:
        parts += ["", "## Not read", ""] + [f"- `{p.path}`: {p.message}" for p in fleet.problems]
    return "\n".join(parts) + "\n"


# ---- CSV --------------------------------------------------------------------------------

CSV_HEADERS = [
    "type",
    "name",
    "version",
    "status",
    "worst",
    *SEVERITIES,
    "runs",
    "last_run",
    "outcome",
    "path",
    "details",
]


def to_csv(fleet: Fleet) -> str:
    """One row per job, repository and package (a spreadsheet's view)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADERS)
    for job in _ranked_jobs(fleet):
        counts = severity_counts([*job.blockers, *job.source_blockers])
        latest = job.latest
        writer.writerow(
            ["job", job.name, "", "ready" if job.ready else "blocked", job.worst or ""]
            + [counts.get(s, 0) for s in SEVERITIES]
            + [len(job.runs), latest.to_json()["ended_at"], latest.outcome, latest.path]
            + [
                "; ".join(
                    [
                        *(f"{b.kind} {b.count}x" for b in job.blockers),
                        *(f"{f.code} (source)" for f in job.source_blockers),
                        *([job.why] if job.why else []),
                    ]
                )
            ]
        )
    for source in (*fleet.repositories, *fleet.packages):
        blockers = source_blockers(source)
        counts = severity_counts(blockers)
        writer.writerow(
            [source.kind, source.name, source.version or "", source_status(source).split(" ")[0]]
            + [worst_of([f.severity for f in blockers]) or ""]
            + [counts.get(s, 0) for s in SEVERITIES]
            + ["", "", "", source.path, "; ".join(sorted({f.code for f in blockers}))]
        )
    for problem in fleet.problems:
        writer.writerow(
            ["problem", problem.path, "", "unreadable", "", 0, 0, 0, 0, "", "", "", problem.path, problem.message]
        )
    return out.getvalue()


# ---- HTML -------------------------------------------------------------------------------


def trend_svg(kind: str, days: list[str], counts: list[int], color: str) -> str:
    """A small line chart: jobs relying on ``kind`` per day."""
    w, h, pad = 320, 120, 28
    top = max(max(counts, default=0), 1)
    n = max(len(days) - 1, 1)

    def x(i: int) -> float:
        return pad + (w - 2 * pad) * (i / n if len(days) > 1 else 0.5)

    def y(v: int) -> float:
        return h - pad - (h - 2 * pad) * v / top

    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(counts))
    dots = "".join(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{color}"/>' for i, v in enumerate(counts))
    first, last = html.escape(days[0]), html.escape(days[-1])
    return (
        f"<figure><figcaption>{html.escape(kind)}</figcaption>"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
        f'aria-label="jobs relying on {html.escape(kind)} per day">'
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#999"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="#999"/>'
        f'<text x="{pad - 4}" y="{pad + 4}" text-anchor="end" font-size="10">{top}</text>'
        f'<text x="{pad - 4}" y="{h - pad + 4}" text-anchor="end" font-size="10">0</text>'
        f'<text x="{pad}" y="{h - 8}" font-size="10">{first}</text>'
        f'<text x="{w - pad}" y="{h - 8}" text-anchor="end" font-size="10">{last}</text>'
        f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}"/>{dots}</svg></figure>'
    )


def _html_table(headers: list[str], rows: list[list[str]], classes: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        f'<tr class="{c}">' + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row, c in zip(rows, classes, strict=True)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; font-size: 14px; }
th { background: #f4f4f4; }
tr.breaks td:first-child { border-left: 4px solid #d62728; }
tr.silent td:first-child { border-left: 4px solid #e6a700; }
tr.warns td:first-child { border-left: 4px solid #17becf; }
tr.fix td:first-child { border-left: 4px solid #2ca02c; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; } figcaption { font-size: 13px; font-weight: 600; }
.summary { font-size: 18px; }
"""


def to_html(fleet: Fleet) -> str:
    days, series = fleet.trend()
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<title>Readiness to flip RAY_TRAIN_V2_ENABLED</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>Readiness to flip <code>RAY_TRAIN_V2_ENABLED</code></h1>",
        f'<p class="summary">{html.escape(summary_line(fleet))}</p>',
    ]
    if series:
        parts.append("<h2>Trend: jobs relying on each V1-only behaviour (latest run by each day)</h2>")
        charts = [trend_svg(k, days, v, COLORS[i % len(COLORS)]) for i, (k, v) in enumerate(series.items())]
        parts.append(f'<div class="charts">{"".join(charts)}</div>')
    if fleet.blockers:
        parts += [
            "<h2>Fix first</h2>",
            _html_table(
                BLOCKER_HEADERS, [blocker_row(b) for b in fleet.blockers], [b.severity for b in fleet.blockers]
            ),
        ]
    if fleet.jobs:
        ranked = _ranked_jobs(fleet)
        parts += [
            "<h2>Jobs</h2>",
            _html_table(JOB_HEADERS, [job_row(j) for j in ranked], [j.worst or "" for j in ranked]),
        ]
    for title, sources in (("Repositories", fleet.repositories), ("Installed packages", fleet.packages)):
        if sources:
            classes = [worst_of([f.severity for f in source_blockers(s)]) or "" for s in sources]
            parts += [f"<h2>{title}</h2>", _html_table(SOURCE_HEADERS, [source_row(s) for s in sources], classes)]
    if fleet.problems:
        items = "".join(
            f"<li><code>{html.escape(p.path)}</code>: {html.escape(p.message)}</li>" for p in fleet.problems
        )
        parts.append(f"<h2>Not read</h2><ul>{items}</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


RENDERERS = {"text": to_text, "json": to_json, "markdown": to_markdown, "csv": to_csv, "html": to_html}
