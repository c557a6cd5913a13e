"""Pairing two runs' fits and explaining every difference by a documented V1/V2 difference.

Plain code over the JSON records of :mod:`compat_core.capture`: no Ray, no subprocess.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

DOCS = "docs/compatibility.md"

# The documented differences a comparison can point to: section number -> (title, anchor).
SECTIONS: dict[int, tuple[str, str]] = {
    2: ("Free-floating metrics", "2-free-floating-metrics-report-without-a-checkpoint"),
    3: ("result.metrics", "3-resultmetrics"),
    4: ("result.metrics_dataframe", "4-resultmetrics_dataframe"),
    5: ("progress.csv and result.json", "5-progresscsv-and-resultjson"),
    15: ("Failures", "15-failures"),
    17: ("Re-running with the same name", "17-re-running-with-the-same-name-and-storage-path"),
    18: ("Checkpoint directories and run paths", "18-other-differences-compat-passes-through-unchanged"),
}


def link(section: int) -> str:
    return f"{DOCS}#{SECTIONS[section][1]}"


@dataclass
class Difference:
    """One aspect in which the V1 and V2 runs of a fit differ."""

    aspect: str
    v1: Any
    v2: Any
    section: int | None  # the compatibility.md section that explains it; None: unexplained
    why: str = ""

    @property
    def explained(self) -> bool:
        return self.section is not None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["explained"] = self.explained
        data["link"] = link(self.section) if self.section is not None else None
        return data


@dataclass
class FitComparison:
    """The ``index``-th fit of each run (None where a run had fewer fits)."""

    index: int
    v1: dict[str, Any] | None
    v2: dict[str, Any] | None
    rows: list[tuple[str, Any, Any]] = field(default_factory=list)  # every aspect shown, equal or not
    differences: list[Difference] = field(default_factory=list)

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if not d.explained]


def close(a: Any, b: Any, rtol: float) -> bool:
    """Equality of plain JSON values; numbers within ``rtol`` (relative) of each other."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(close(a[k], b[k], rtol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, rtol) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=rtol)
    return bool(a == b)


def _rank0_last(fit: Mapping[str, Any]) -> dict[str, Any] | None:
    rounds = fit.get("rounds") or []
    return rounds[-1]["workers"][0] if rounds else None


def _kept_metrics(fit: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c["metrics"] for c in fit.get("checkpoints") or []]


def compare_fit(index: int, v1: dict[str, Any] | None, v2: dict[str, Any] | None, rtol: float) -> FitComparison:
    out = FitComparison(index, v1, v2)
    if v1 is None or v2 is None:
        missing = "v1" if v1 is None else "v2"
        out.differences.append(Difference("fit", v1 is not None, v2 is not None, None, f"no such fit under {missing}"))
        return out

    def check(aspect: str, a: Any, b: Any, section: int | None = None, why: str = "", shown: bool = True) -> None:
        if shown:
            out.rows.append((aspect, a, b))
        if not close(a, b, rtol):
            out.differences.append(Difference(aspect, a, b, section, why))

    # What V1 and V2 share: any difference here is unexplained.
    check("error", v1["error"], v2["error"], None, "the fit failed under one setting only")
    check("after_report calls", _calls(v1), _calls(v2), None, "every round reaches after_report in both")
    check("every worker's reports", v1["worker_reports"], v2["worker_reports"])
    check("checkpoints (count)", len(v1["checkpoints"]), len(v2["checkpoints"]))
    check(
        "checkpoint metrics (validation merged)",
        [r["checkpoint_metrics"] for r in v1["rounds"] if r["has_checkpoint"]],
        [r["checkpoint_metrics"] for r in v2["rounds"] if r["has_checkpoint"]],
    )
    check(
        "validation status",
        [r["status"] for r in v1["rounds"] if r["has_checkpoint"]],
        [r["status"] for r in v2["rounds"] if r["has_checkpoint"]],
    )
    check("V1-only usages", _usages(v1), _usages(v2), None, "compat records the same usages in both modes")

    # What the engines do differently, each explained when it is exactly the documented difference.
    last = v2["checkpoints"][-1]["metrics"] if v2["checkpoints"] else None
    v1_last = _rank0_last(v1)
    metrics_explained = close(v2["metrics"], last, rtol) and (
        v1_last is None or all(close(v1["metrics"].get(k), v, rtol) for k, v in v1_last.items())
    )
    check(
        "result.metrics",
        v1["metrics"],
        v2["metrics"],
        3 if metrics_explained else None,
        "V1 returns the last report, V2 the latest checkpoint's metrics",
    )
    v1_rows = (v1["metrics_dataframe"] or {}).get("rows", [])
    v2_rows = (v2["metrics_dataframe"] or {}).get("rows", [])
    rows_explained = len(v1_rows) == len(v1["rounds"]) and close(v2_rows, _kept_metrics(v2), rtol)
    keep_v1_logs = close(v1_rows, v2_rows, rtol)
    check(
        "metrics_dataframe rows",
        len(v1_rows),
        len(v2_rows),
        4 if rows_explained else None,
        "V1 has a row per report, V2 a row per checkpoint",
    )
    if not keep_v1_logs and rows_explained:
        out.rows.append(("metrics_dataframe columns", _columns(v1), _columns(v2)))
    check(
        "checkpoint directories",
        [c["dir_name"] for c in v1["checkpoints"]],
        [c["dir_name"] for c in v2["checkpoints"]],
        18,
        "V1 names them checkpoint_00000N, V2 checkpoint_<timestamp> or checkpoint_dir_name",
    )
    logs = {"progress.csv", "result.json"}
    files_explained = not (logs & set(v2["run_files"])) or logs <= set(v2["run_files"])
    check(
        "run directory",
        v1["run_files"],
        v2["run_files"],
        5 if files_explained else None,
        "V1 writes Tune's logs into a trial directory; V2 only checkpoints and its snapshot",
    )
    out.rows.append(("fit seconds", v1["seconds"], v2["seconds"]))
    return out


def _calls(fit: Mapping[str, Any]) -> list[Any]:
    return [[r["attempt"], r["index"], r["workers"], r["has_checkpoint"]] for r in fit["rounds"]]


def _usages(fit: Mapping[str, Any]) -> list[Any]:
    return [[u["kind"], u["count"], u["first_site"]] for u in fit["v1_usage"]]


def _columns(fit: Mapping[str, Any]) -> list[str]:
    frame = fit.get("metrics_dataframe")
    return sorted(frame["columns"]) if frame else []


def compare_runs(v1_fits: list[dict[str, Any]], v2_fits: list[dict[str, Any]], rtol: float) -> list[FitComparison]:
    """Fits paired in call order; an unequal count leaves the extra fits unpaired."""
    count = max(len(v1_fits), len(v2_fits))
    return [
        compare_fit(i, v1_fits[i] if i < len(v1_fits) else None, v2_fits[i] if i < len(v2_fits) else None, rtol)
        for i in range(count)
    ]
