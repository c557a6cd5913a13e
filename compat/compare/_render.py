"""The comparison as terminal tables (rich), one self-contained HTML file, and JSON."""

from __future__ import annotations

import html
import io
import json
from typing import Any

from compat.compare._diff import SECTIONS, FitComparison, link
from compat.compare._run import ScriptRun

SCHEMA = "ray-train-compat/compare/1"


def value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
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


def terminal(runs: dict[str, ScriptRun], fits: list[FitComparison], verdict: str, ok: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for fit in fits:
        table = Table(title=f"fit {fit.index + 1}", show_lines=True, expand=True)
        table.add_column("aspect", overflow="fold", ratio=2)
        table.add_column("V1 (RAY_TRAIN_V2_ENABLED=0)", overflow="fold", ratio=4)
        table.add_column("V2 (RAY_TRAIN_V2_ENABLED=1)", overflow="fold", ratio=4)
        table.add_column("verdict", overflow="fold", ratio=3)
        rows = fit.rows or [(d.aspect, d.v1, d.v2) for d in fit.differences]
        for aspect, v1, v2 in rows:
            label, style = verdict_of(fit, aspect, v1, v2)
            table.add_row(aspect, value_text(v1), value_text(v2), f"[{style}]{label}[/]", style=None)
        console.print(table)
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
                "v1": fit.v1,
                "v2": fit.v2,
                "differences": [d.as_json() for d in fit.differences],
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
"""


def html_report(runs: dict[str, ScriptRun], fits: list[FitComparison], verdict: str, ok: bool, command: str) -> str:
    """One self-contained page: no script, no stylesheet or image fetched from anywhere."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>compat compare</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>V1 vs V2: what flipping RAY_TRAIN_V2_ENABLED changes</h1>",
        f"<p><code>{html.escape(command)}</code></p>",
        f"<h2 class='{'ok' if ok else 'bad'}'>{html.escape(verdict)}</h2>",
        "<table><tr><th>setting</th><th>exit</th><th>fits</th><th>seconds</th><th>log</th>"
        "<th>last traceback lines</th></tr>",
    ]
    for run in runs.values():
        status = "timed out" if run.exit_status is None else str(run.exit_status)
        tail = "<br>".join(html.escape(line) for line in run.traceback_tail)
        parts.append(
            f"<tr><td>{run.backend}</td><td>{status}</td><td>{len(run.fits)}</td><td>{run.seconds:.0f}</td>"
            f"<td>{html.escape(run.log)}</td><td>{tail}</td></tr>"
        )
    parts.append("</table>")
    for fit in fits:
        parts.append(f"<h2>fit {fit.index + 1}</h2><table>")
        parts.append(
            "<tr><th style='width:16%'>aspect</th><th>V1</th><th>V2</th><th style='width:22%'>verdict</th></tr>"
        )
        for aspect, v1, v2 in fit.rows or [(d.aspect, d.v1, d.v2) for d in fit.differences]:
            label, style = verdict_of(fit, aspect, v1, v2)
            css = "unexplained" if style == "bold red" else ("explained" if style == "yellow" else "same")
            difference = next((d for d in fit.differences if d.aspect == aspect and d.section), None)
            if difference is not None:
                label_html = f"<a href='{html.escape(link(difference.section or 0))}'>{html.escape(label)}</a>"
            else:
                label_html = html.escape(label)
            parts.append(
                f"<tr class='{css}'><td>{html.escape(aspect)}</td><td>{html.escape(value_text(v1))}</td>"
                f"<td>{html.escape(value_text(v2))}</td><td>{label_html}</td></tr>"
            )
        parts.append("</table><div class='plots'>")
        try:
            drawn = plots(fit)
        except PlotsUnavailable as missing:
            parts.append(f"<p class='note'>{html.escape(str(missing))}</p>")
            drawn = []
        for key, svg in drawn:
            parts.append(f"<figure data-metric='{html.escape(key)}'>{svg}</figure>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
