"""The comparison as terminal tables (rich), one self-contained HTML file, and JSON."""

from __future__ import annotations

import html
import io
import json
import os
import re
import sys
from typing import Any

from compat.compare._diff import SECTIONS, FitComparison, link
from compat.compare._run import ScriptRun

SCHEMA = "ray-train-compat/compare/1"


def value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:  # what the program reads: Python's word, not JSON's
        return "None"
    return json.dumps(value, default=str)


def verdict_of(fit: FitComparison, aspect: str, v1: Any = None, v2: Any = None) -> tuple[str, str]:
    """(label, style) for one row: same, explained by a section, or unexplained."""
    for difference in fit.differences:
        if difference.aspect == aspect:
            if difference.section is None:
                return f"UNEXPLAINED: {difference.why}" if difference.why else "UNEXPLAINED", "bold red"
            return f"explained: §{difference.section} {SECTIONS[difference.section][0]}", "yellow"
    if aspect == "fit seconds":
        return "", "dim"
    return ("same", "dim") if v1 == v2 else ("for reference (see the row above)", "dim")


# What one item of an aspect's value is called, for the one-line summaries.
_NOUNS = {
    "after_report calls": "call",
    "every worker's reports": "report",
    "checkpoint metrics (validation merged)": "checkpoint",
    "validation status": "checkpoint",
    "V1-only usages": "usage",
    "checkpoint directories": "directory",
    "run directory": "entry",
    "metrics_dataframe columns": "column",
}
FILE_WIDTH = 200  # compare's tables written to a file or a pipe
_SHOWN_ROWS = 3  # rows of a list difference shown before "N more"


def _record(fit: FitComparison) -> dict[str, Any]:
    """The fit's record that names it (V1's; V2's when V1 had no such fit)."""
    return fit.v1 or fit.v2 or {}


def _name(record: dict[str, Any]) -> str | None:
    """A fit's run name; a Tune trial's sample and sweep (``{"lr": 0.1} of "lr_sweep"``)."""
    trial = record.get("trial")
    if trial:
        sample = json.dumps(trial.get("config"), sort_keys=True, default=str)
        return f'trial {sample} of "{trial.get("experiment")}"'
    name = record.get("run_name")
    return f'"{name}"' if name else None


def summary_row(fit: FitComparison) -> tuple[str, str, str, str, str]:
    """The summary's cells for a fit: number, trainer, run name, fit() call site, differences."""
    record = _record(fit)
    site = record.get("call_site")
    return (
        str(fit.index + 1),
        record.get("trainer") or "",
        (_name(record) or "(unnamed)").strip('"'),
        short_site(site) if site else "",
        str(len(fit.differences)),
    )


def fit_title(fit: FitComparison) -> str:
    """``fit 2: TorchTrainer "lr_sweep" at train.py:41``: which fit() call of the script it is
    (``sweep 3: Tuner "lr_sweep"``, a sweep's own comparison)."""
    record = _record(fit)
    parts = [f"{'sweep' if record.get('sweep') else 'fit'} {fit.index + 1}"]
    trainer, name, site = record.get("trainer"), _name(record), record.get("call_site")
    described = " ".join(p for p in (trainer or "", name or "") if p)
    if described:
        parts.append(f": {described}")
    if site:
        parts.append(f" at {short_site(site)}")
    return "".join(parts)


def short_site(site: str) -> str:
    """A call site relative to the working directory when it is under it."""
    path, _, line = site.rpartition(":")
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        if not relative.startswith(".."):
            path = relative
    return f"{path}:{line}"


def summarize(aspect: str, value: Any) -> str:
    """A one-line summary of an aspect's value ("4 calls", "3 keys: loss, epoch, lr")."""
    if value is None:
        return "none"
    if isinstance(value, list):
        return _count(len(value), _NOUNS.get(aspect, "item"))
    if isinstance(value, dict):
        keys = list(value)
        shown = ", ".join(keys[:5]) + (f", ... ({len(keys)} keys)" if len(keys) > 5 else "")
        return f"{{{shown}}}" if keys else "{}"
    return value_text(value)


def compact_diff(v1: Any, v2: Any, aspect: str = "") -> tuple[str, str]:
    """The two sides of a difference, compactly: for mappings only the keys that differ; for
    names (``... columns``) what each side has that the other has not; for lists the lengths
    and the items that differ (the first few), labelled by what they hold; a side that is
    None as ``None``; anything else as it is."""
    if aspect.endswith("columns") and all(isinstance(v, list) or v is None for v in (v1, v2)):
        return _names(v1, v2), _names(v2, v1)
    if isinstance(v1, list) != isinstance(v2, list) and None in (v1, v2):  # a list against nothing
        noun = _NOUNS.get(aspect, "item")
        return tuple(_count(len(v), noun) if isinstance(v, list) else value_text(v) for v in (v1, v2))  # type: ignore[return-value]
    if isinstance(v1, dict) and isinstance(v2, dict):
        keys = [k for k in dict.fromkeys([*v1, *v2]) if v1.get(k, _MISSING) != v2.get(k, _MISSING)]
        same = len(set(v1) & set(v2)) - len([k for k in keys if k in v1 and k in v2])
        tail = f" (+{same} equal)" if same else ""

        def keyed(d: dict[str, Any]) -> str:
            return "{" + ", ".join(f"{k}: {value_text(d[k])}" if k in d else f"{k}: -" for k in keys) + "}" + tail

        return keyed(v1), keyed(v2)
    if isinstance(v1, list) and isinstance(v2, list):
        differing = [i for i in range(max(len(v1), len(v2))) if i >= len(v1) or i >= len(v2) or v1[i] != v2[i]]

        noun = _NOUNS.get(aspect, "row")

        def side(values: list[Any]) -> str:
            lines = [f"[{i}] {value_text(values[i]) if i < len(values) else '-'}" for i in differing[:_SHOWN_ROWS]]
            more = len(differing) - _SHOWN_ROWS
            return "\n".join(
                [f"{_count(len(values), noun)}; differing:", *lines] + ([f"... {more} more"] if more > 0 else [])
            )

        return side(v1), side(v2)
    return value_text(v1), value_text(v2)


_MISSING = object()


def _names(mine: list[str] | None, other: list[str] | None) -> str:
    """One side of a difference of names (a frame's columns), by name, not by position."""
    if mine is None:
        return "None"
    only = [n for n in mine if n not in set(other or [])]
    shown = ", ".join(only[:8]) + (f", ... ({len(only)})" if len(only) > 8 else "")
    return f"{_count(len(mine), 'column')}" + (f"; only here: {shown}" if only else "; all on the other side")


def _count(n: int, noun: str) -> str:
    if n != 1:
        noun = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun}"


def _aspects(fit: FitComparison) -> tuple[list[tuple[str, Any, Any]], list[tuple[str, Any, Any]]]:
    """The fit's rows split: the differing aspects first, then those equal under both."""
    rows = fit.rows or [(d.aspect, d.v1, d.v2) for d in fit.differences]
    differing = {d.aspect for d in fit.differences}
    return [r for r in rows if r[0] in differing], [r for r in rows if r[0] not in differing]


def _fit_verdict(fit: FitComparison) -> tuple[str, str]:
    if fit.not_compared:
        return "not compared", "dim"
    if fit.unexplained:
        return f"{len(fit.unexplained)} UNEXPLAINED", "bold red"
    if fit.differences:
        return "explained", "yellow"
    return "identical", "green"


def terminal(
    runs: dict[str, ScriptRun], fits: list[FitComparison], verdict: str, ok: bool, *, verbose: bool = False
) -> None:
    """A summary of every fit, then each fit: its differences (compact, with the section that
    explains them), then one line per aspect equal under both (``verbose``: every value in full)."""
    from rich.console import Console
    from rich.table import Table

    # A terminal's own width (rich folds the tables' cells to it); a file or a pipe, which rich
    # would cut at 80 columns, gets FILE_WIDTH: full lines (COLUMNS, when set, wins).
    wide = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    console = Console(width=FILE_WIDTH if wide else None)
    summary = Table(title="fits")
    for column, ratio in (("fit", 1), ("trainer", 3), ("run name", 3), ("fit() call", 5), ("differences", 2)):
        summary.add_column(column, overflow="fold", ratio=ratio)
    summary.add_column("verdict", overflow="fold", ratio=3)
    for fit in fits:
        label, style = _fit_verdict(fit)
        summary.add_row(*summary_row(fit), f"[{style}]{label}[/]")
    console.print(summary)
    for fit in fits:
        differing, equal = _aspects(fit)
        label, style = _fit_verdict(fit)
        console.rule(f"[bold]{fit_title(fit)}[/] [{style}]({label})[/]", align="left")
        if fit.not_compared:
            console.print(f"  not compared: {fit.not_compared}", highlight=False)
        if verbose:
            differing, equal = differing + equal, []
        if differing:
            table = Table(show_lines=True, expand=True)
            table.add_column("aspect", overflow="fold", ratio=2)
            table.add_column("V1 (RAY_TRAIN_V2_ENABLED=0)", overflow="fold", ratio=4)
            table.add_column("V2 (RAY_TRAIN_V2_ENABLED=1)", overflow="fold", ratio=4)
            table.add_column("verdict", overflow="fold", ratio=3)
            for aspect, v1, v2 in differing:
                label, style = verdict_of(fit, aspect, v1, v2)
                a, b = (value_text(v1), value_text(v2)) if verbose else compact_diff(v1, v2, aspect)
                table.add_row(aspect, a, b, f"[{style}]{label}[/]")
            console.print(table)
        for aspect, v1, v2 in equal:
            if aspect == "fit seconds":
                console.print(f"  [dim]{aspect}: V1 {value_text(v1)}, V2 {value_text(v2)}[/]", highlight=False)
            else:
                console.print(f"  [dim]{aspect}: {summarize(aspect, v1)}, identical[/]", highlight=False)
    for run in runs.values():
        status = "timed out" if run.exit_status is None else f"exit {run.exit_status}"
        console.print(f"{run.backend}: {status}, {len(run.fits)} fit(s), {run.seconds:.0f} s, log: {run.log}")
        for line in run.traceback_tail:
            console.print(f"    {line}", style="red", markup=False, highlight=False)
    console.print(f"[bold {'green' if ok else 'red'}]{verdict}[/]")


def as_json(runs: dict[str, ScriptRun], fits: list[FitComparison], verdict: str, ok: bool) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "verdict": {"ok": ok, "text": verdict},
        "runs": {name: run.as_json() for name, run in runs.items()},
        "fits": [
            {
                "index": fit.index,
                "title": fit_title(fit),
                "trainer": _record(fit).get("trainer"),
                "run_name": _record(fit).get("run_name"),
                "call_site": _record(fit).get("call_site"),
                "verdict": _fit_verdict(fit)[0],
                "not_compared": fit.not_compared,
                "v1": fit.v1,
                "v2": fit.v2,
                "differences": [d.as_json() for d in fit.differences],
                "identical": [aspect for aspect, _, _ in _aspects(fit)[1] if aspect != "fit seconds"],
            }
            for fit in fits
        ],
    }


def _numeric_keys(fit: FitComparison) -> list[str]:
    keys: dict[str, None] = {}
    for record in (fit.v1, fit.v2):
        for round_ in (record or {}).get("rounds", []):
            for key, value in (round_["workers"][0] or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    keys.setdefault(key, None)
    return list(keys)


PLOTS_UNAVAILABLE = (
    "No plots: matplotlib is not installed. Install it to draw one plot per metric: "
    'pip install "ray-train-compat[plot]" (or pip install matplotlib).'
)


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed: the report is written without plots, and says so."""


def plots(fit: FitComparison) -> list[tuple[str, str]]:
    """One SVG per numeric metric: V1's rank-0 reports as a line, V2's checkpointed reports
    as points, validated values marked. matplotlib is imported only here, when a fit has a
    numeric metric to draw (raises :class:`PlotsUnavailable` without it)."""
    if not _numeric_keys(fit):
        return []
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise PlotsUnavailable(PLOTS_UNAVAILABLE) from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    for key in _numeric_keys(fit):
        figure, axes = plt.subplots(figsize=(6, 3))
        v1_rounds = (fit.v1 or {}).get("rounds", [])
        xs = [i for i, r in enumerate(v1_rounds) if _number(r["workers"][0].get(key))]
        axes.plot(xs, [v1_rounds[i]["workers"][0][key] for i in xs], "-", label="V1: every report (rank 0)")
        v2_rounds = (fit.v2 or {}).get("rounds", [])
        points = [i for i, r in enumerate(v2_rounds) if r["has_checkpoint"] and _number(r["workers"][0].get(key))]
        axes.plot(points, [v2_rounds[i]["workers"][0][key] for i in points], "o", label="V2: checkpointed reports")
        validated = [
            (i, r["checkpoint_metrics"][key])
            for i, r in enumerate(v2_rounds)
            if r["status"] == "VALIDATED" and _number((r["checkpoint_metrics"] or {}).get(key))
            and r["checkpoint_metrics"][key] != r["workers"][0].get(key)
        ]  # fmt: skip
        if validated:
            axes.plot(*zip(*validated, strict=True), "x", markersize=9, label="V2: validated value")
        axes.set_xlabel("report index")
        axes.set_ylabel(key)
        axes.legend(fontsize="small")
        figure.tight_layout()
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg")
        plt.close(figure)
        svg = buffer.getvalue()
        out.append((key, svg[svg.index("<svg") :]))
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5em; table-layout: fixed; }
td, th { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; word-wrap: break-word;
         font-family: ui-monospace, monospace; font-size: 12px; }
th { background: #f3f3f3; font-family: system-ui, sans-serif; }
.same { color: #888; } .explained { background: #fff7d6; } .unexplained { background: #ffd9d9; font-weight: bold; }
.ok { color: #176f2c; } .bad { color: #b00020; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; } .plots figure { margin: 0; }
details summary { cursor: pointer; } details pre { white-space: pre-wrap; font-size: 11px; margin: 4px 0; }
.equal p, .equal details { margin: 2px 0; font-size: 13px; } .note { color: #666; }
"""


# A terminal's colour codes (Ray colours its workers' log prefixes and errors), raw or as JSON
# writes them: text for a terminal, noise on a page.
_ANSI = re.compile(r"(?:\x1b|\\u001b)\[[0-9;]*[A-Za-z]")


def _escape(text: str) -> str:
    return html.escape(_ANSI.sub("", text))


def html_report(runs: dict[str, ScriptRun], fits: list[FitComparison], verdict: str, ok: bool, command: str) -> str:
    """One self-contained page: no script, no stylesheet or image fetched from anywhere. A
    summary of the fits first; per fit, its differences (compact, each value in full behind
    ``<details>``), then one line per aspect equal under both (its value behind ``<details>``)."""
    esc = _escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>compat compare</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>V1 vs V2: what flipping RAY_TRAIN_V2_ENABLED changes</h1>",
        f"<p><code>{esc(command)}</code></p>",
        f"<h2 class='{'ok' if ok else 'bad'}'>{esc(verdict)}</h2>",
        "<table class='summary'><tr><th style='width:5%'>fit</th><th>trainer</th><th>run name</th>"
        "<th>fit() call</th><th style='width:10%'>differences</th><th>verdict</th></tr>",
    ]
    for fit in fits:
        label, _ = _fit_verdict(fit)
        css = "unexplained" if fit.unexplained else ("explained" if fit.differences else "same")
        number, *cells = summary_row(fit)
        parts.append(
            f"<tr class='{css}'><td><a href='#fit-{number}'>{number}</a></td>"
            + "".join(f"<td>{esc(cell)}</td>" for cell in [*cells, label])
            + "</tr>"
        )
    parts.append("</table>")
    parts.append(
        "<table><tr><th>setting</th><th>exit</th><th>fits</th><th>seconds</th><th>log</th>"
        "<th>last traceback lines</th></tr>"
    )
    for run in runs.values():
        status = "timed out" if run.exit_status is None else str(run.exit_status)
        tail = "<br>".join(esc(line) for line in run.traceback_tail)
        parts.append(
            f"<tr><td>{run.backend}</td><td>{status}</td><td>{len(run.fits)}</td><td>{run.seconds:.0f}</td>"
            f"<td>{esc(run.log)}</td><td>{tail}</td></tr>"
        )
    parts.append("</table>")
    for fit in fits:
        differing, equal = _aspects(fit)
        label, _ = _fit_verdict(fit)
        parts.append(f"<h2 id='fit-{fit.index + 1}'>{esc(fit_title(fit))} ({esc(label)})</h2>")
        if fit.not_compared:
            parts.append(f"<p class='note'>not compared: {esc(fit.not_compared)}</p>")
        if differing:
            parts.append(
                "<table><tr><th style='width:16%'>aspect</th><th>V1</th><th>V2</th>"
                "<th style='width:22%'>verdict</th></tr>"
            )
        for aspect, v1, v2 in differing:
            label, style = verdict_of(fit, aspect, v1, v2)
            css = "unexplained" if style == "bold red" else "explained"
            difference = next((d for d in fit.differences if d.aspect == aspect and d.section), None)
            if difference is not None:
                label_html = f"<a href='{esc(link(difference.section or 0))}'>{esc(label)}</a>"
            else:
                label_html = esc(label)
            a, b = compact_diff(v1, v2, aspect)
            parts.append(
                f"<tr class='{css}'><td>{esc(aspect)}</td><td>{_with_full(a, v1)}</td>"
                f"<td>{_with_full(b, v2)}</td><td>{label_html}</td></tr>"
            )
        if differing:
            parts.append("</table>")
        parts.append("<div class='equal'>")
        for aspect, v1, v2 in equal:
            if aspect == "fit seconds":
                parts.append(f"<p class='same'>{esc(aspect)}: V1 {esc(value_text(v1))}, V2 {esc(value_text(v2))}</p>")
                continue
            parts.append(
                f"<details class='same'><summary>{esc(aspect)}: {esc(summarize(aspect, v1))}, identical</summary>"
                f"<pre>{esc(json.dumps(v1, indent=1, default=str))}</pre></details>"
            )
        parts.append("</div><div class='plots'>")
        try:
            drawn = plots(fit)
        except PlotsUnavailable as missing:
            parts.append(f"<p class='note'>{esc(str(missing))}</p>")
            drawn = []
        for key, svg in drawn:
            parts.append(f"<figure data-metric='{esc(key)}'>{svg}</figure>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _with_full(compact: str, value: Any) -> str:
    """A compact value, and the value in full behind ``<details>`` when the compact one leaves
    something out."""
    full = value_text(value)
    shown = _escape(compact).replace("\n", "<br>")
    if full == compact:
        return shown
    dumped = _escape(json.dumps(value, indent=1, default=str))
    return f"{shown}<details><summary>in full</summary><pre>{dumped}</pre></details>"
