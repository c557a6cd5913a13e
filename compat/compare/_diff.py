"""Pairing two runs' fits and explaining every difference by a documented V1/V2 difference.

Plain code over the JSON records of :mod:`compat._capture`: no Ray, no subprocess.
"""

from __future__ import annotations

import json
import math
import re
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
    21: ("Retries", "21-retries-failureconfigmax_failuresn"),
    24: ("Hyperparameter search", "24-hyperparameter-search-tunetunertrainer-param_space"),
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
    # Why the fits were not compared (a Tune trial whose fit() did not return), else None.
    not_compared: str | None = None

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
    stopped = [name for name, fit in (("V1", v1), ("V2", v2)) if fit is not None and fit.get("unfinished")]
    if stopped:
        out.not_compared = (
            f"Tune stopped the trial before its fit() returned under {' and '.join(stopped)} (a scheduler's early "
            "stop): what it reported went to Tune, which compare does not see"
        )
        return out
    if v1 is None or v2 is None:
        missing = "v1" if v1 is None else "v2"
        out.differences.append(Difference("fit", v1 is not None, v2 is not None, None, f"no such fit under {missing}"))
        return out

    def check(aspect: str, a: Any, b: Any, section: int | None = None, why: str = "", shown: bool = True) -> None:
        if shown:
            out.rows.append((aspect, a, b))
        if not close(a, b, rtol):
            out.differences.append(Difference(aspect, a, b, section, why))

    # What V1 and V2 share: any difference here is unexplained, but a failure of the same kind
    # under both (each engine words Ray's error its own way).
    errors = v1["error"], v2["error"]
    if None in errors:
        check("error", *errors, None, "the fit failed under one setting only")
    else:
        alike = _error_kind(errors[0]) == _error_kind(errors[1])
        why = "failed under both settings with the same error type" if alike else "failed differently"
        check("error", *errors, 15 if alike else None, f"the fit {why} (each engine words its failure itself)")
    check("after_report calls", _calls(v1), _calls(v2), None, "every round reaches after_report in both")
    check("every worker's reports", v1["worker_reports"], v2["worker_reports"])
    # A rerun with the name and storage of an earlier run (both runs say so: rerun-same-name):
    # V2 resumed the stored run, whose checkpoints come before this run's; V1 started afresh.
    resumed = (
        all(any(u["kind"] == "rerun-same-name" for u in fit["v1_usage"]) for fit in (v1, v2))
        and len(v2["checkpoints"]) > len(v1["checkpoints"])
        and close(_kept_metrics(v2)[len(v2["checkpoints"]) - len(v1["checkpoints"]) :], _kept_metrics(v1), rtol)
    )
    check(
        "checkpoints (count)",
        len(v1["checkpoints"]),
        len(v2["checkpoints"]),
        17 if resumed else None,
        "the run re-used an earlier run's name and storage: V2 resumed it (its checkpoints come first), "
        "V1 started a fresh trial"
        if resumed
        else "",
    )
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
    # An unnamed RunConfig made once under V2 has V2's name from then on (as Ray's): a second fit
    # with it reruns that name (V2 resumes it; rerun-same-name under v2 only), where V1 names each
    # fit after its trainer.
    unnamed_rerun = v1.get("run_name") is None and [u for u in _usages(v2) if u[0] != "rerun-same-name"] == _usages(v1)
    check(
        "V1-only usages",
        _usages(v1),
        _usages(v2),
        17 if unnamed_rerun else None,
        "an unnamed RunConfig made under V2 is named then, as Ray's: a second fit with it reruns that name, "
        "which V2 resumes (V1 names each fit after its trainer)"
        if unnamed_rerun
        else "compat records the same usages in both modes",
    )

    check(
        "checkpoint directories",
        [c["dir_name"] for c in v1["checkpoints"]],
        [c["dir_name"] for c in v2["checkpoints"]],
        18,
        "V1 names them checkpoint_00000N, V2 checkpoint_<timestamp> or checkpoint_dir_name",
    )
    if v1.get("trial") or v2.get("trial"):
        # A Tune trial's fit() returns to Tune, not to the program: what the program reads of it
        # is Tune's results (every round, in both settings: after_report calls above), so the
        # fit's own Result (metrics, frame, directory) is no difference the program can see.
        reads = "Tune's results: every round (above)"
        out.rows.append(("read by the program", reads, reads))
        out.rows.append(("fit seconds", v1["seconds"], v2["seconds"]))
        return out
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
    rows_explained = len(v1_rows) == len(v1["rounds"]) and close(_present(v2_rows), _kept_metrics(v2), rtol)
    check(
        "metrics_dataframe rows",
        len(v1_rows),
        len(v2_rows),
        4 if rows_explained else None,
        "V1 has a row per report, V2 a row per checkpoint",
    )
    if v1["metrics_dataframe"] or v2["metrics_dataframe"]:
        columns = _columns(v1), _columns(v2)
        names = set(columns[0] or []), set(columns[1] or [])
        only_v1, only_v2 = names[0] - names[1], names[1] - names[0]
        no_frame = v2["metrics_dataframe"] is None and rows_explained  # V2: no checkpoint, no frame
        auto_only = not only_v2 and all(_auto_key(c) for c in only_v1)  # V1 adds its keys to every row
        check(
            "metrics_dataframe columns",
            *columns,
            4 if no_frame or auto_only else None,
            "V1's frame has a column for each key V1 adds to every report; V2's only the reported keys"
            if auto_only
            else "V2 has no frame for a run without checkpoints"
            if no_frame
            else "other columns (a nested metric: V1 flattens it to a/b columns, V2 keeps one column of dicts)",
        )
    if v1["metrics_dataframe"] and v2["metrics_dataframe"]:
        # The rows and columns both frames have, value for value and type for type.
        v1_columns, v2_columns = _columns(v1) or [], _columns(v2) or []
        shared = sorted(set(v1_columns) & set(v2_columns) - {c for c in v1_columns if _auto_key(c)})
        if len(v1_rows) == len(v2_rows):
            check(
                "metrics_dataframe values",
                [{c: row.get(c) for c in shared} for row in v1_rows],
                [{c: row.get(c) for c in shared} for row in v2_rows],
                None,
                "the frames' shared rows and columns hold other values",
                shown=False,
            )
        check(
            "metrics_dataframe dtypes",
            {c: _dtypes(v1).get(c) for c in shared},
            {c: _dtypes(v2).get(c) for c in shared},
            None,
            "a column has another type (e.g. int64 under one setting, float64 under the other)",
            shown=False,
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


# compat's failure classes, one per family of Ray's engine (V2 names its two families): a
# failure of the same workers is the same failure whichever engine ran it.
_FAILURE_FAMILIES = {"TrainingFailedError", "WorkerGroupFailedError", "ControllerFailedError"}


def _error_kind(error: str) -> tuple[str, list[tuple[str, str]]]:
    """A fit record's ``"Type: message"`` as (the exception's class, compat's failure classes
    as one; each worker's error type the message names: ``worker 0: RuntimeError``)."""
    kind = error.partition(":")[0].strip()
    if kind in _FAILURE_FAMILIES:
        kind = "TrainingFailedError"
    return kind, sorted(set(re.findall(r"worker (\d+): (\w+)", error)))


def _auto_key(column: str) -> bool:
    """A column of a key V1 adds to every report (``config`` flattened: ``config/...``)."""
    from compat_core.semantics.v1_logs import AUTO_KEYS

    return column in AUTO_KEYS or column.partition("/")[0] in AUTO_KEYS


def _calls(fit: Mapping[str, Any]) -> list[Any]:
    return [[r["attempt"], r["index"], r["workers"], r["has_checkpoint"]] for r in fit["rounds"]]


def _usages(fit: Mapping[str, Any]) -> list[Any]:
    return [[u["kind"], u["count"], u["first_site"]] for u in fit["v1_usage"]]


def _present(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A frame's rows without its missing cells (NaN), as a checkpoint's metrics hold them."""
    return [{k: v for k, v in row.items() if v != "NaN"} for row in rows]


def _dtypes(fit: Mapping[str, Any]) -> dict[str, str]:
    """The frame's column types (records of older captures have none: not compared)."""
    frame = fit.get("metrics_dataframe") or {}
    dtypes: dict[str, str] = frame.get("dtypes") or {}
    return dtypes


def _columns(fit: Mapping[str, Any]) -> list[str] | None:
    """The frame's columns (None: no frame, as V2 gives for a run without checkpoints)."""
    frame = fit.get("metrics_dataframe")
    return sorted(frame["columns"]) if frame else None


def compare_runs(v1_fits: list[dict[str, Any]], v2_fits: list[dict[str, Any]], rtol: float) -> list[FitComparison]:
    """Fits outside Ray Tune paired in call order (an unequal count leaves the extra fits
    unpaired); then each sweep (a ``Tuner``'s trials): its own comparison (trials, their
    lengths, how many ran at once), and its trials paired by their sample."""
    plain = [f for f in v1_fits if not f.get("trial")], [f for f in v2_fits if not f.get("trial")]
    count = max(len(plain[0]), len(plain[1]))
    out = [
        _explain_dying_reports(
            compare_fit(i, plain[0][i] if i < len(plain[0]) else None, plain[1][i] if i < len(plain[1]) else None, rtol)
        )
        for i in range(count)
    ]
    for experiment in dict.fromkeys(f["trial"]["experiment"] for f in [*v1_fits, *v2_fits] if f.get("trial")):
        trials = [_trials_of(fits, experiment) for fits in (v1_fits, v2_fits)]
        pairs = pair_trials(*trials)
        sweep = compare_sweep(len(out), experiment, trials[0], trials[1], pairs)
        out.append(sweep)
        for v1, v2 in pairs:
            out.append(_explain_dying_reports(_explain_trial_length(compare_fit(len(out), v1, v2, rtol), sweep)))
    return out


def _trials_of(fits: list[dict[str, Any]], experiment: str) -> list[dict[str, Any]]:
    """The sweep's trials in the order they started."""
    trials = [f for f in fits if f.get("trial") and f["trial"]["experiment"] == experiment]
    return sorted(trials, key=lambda f: f.get("started_at") or 0.0)


def _sample(fit: dict[str, Any]) -> str:
    return json.dumps(fit["trial"]["config"], sort_keys=True, default=str)


def pair_trials(
    v1: list[dict[str, Any]], v2: list[dict[str, Any]]
) -> list[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """Each V1 trial with the V2 trial of the same sample (a grid's, or a seeded search's);
    trials left over (a sample only one setting drew) paired in the order they started."""
    pairs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
    left = list(v2)
    unmatched = []
    for trial in v1:
        match = next((other for other in left if _sample(other) == _sample(trial)), None)
        if match is None:
            unmatched.append(trial)
            continue
        left.remove(match)
        pairs.append((trial, match))
    for i in range(max(len(unmatched), len(left))):
        pairs.append((unmatched[i] if i < len(unmatched) else None, left[i] if i < len(left) else None))
    return pairs


def most_at_once(trials: list[dict[str, Any]]) -> int | None:
    """The most trials whose fits overlapped in time (each from ``started_at`` for ``seconds``)."""
    edges = sorted(
        edge
        for t in trials
        if t.get("started_at") is not None and t.get("seconds") is not None  # a stopped trial's end is unknown
        for edge in ((t["started_at"], 1), (t["started_at"] + t["seconds"], -1))
    )  # an end sorts before a start at the same instant: back-to-back trials did not overlap
    if not edges:
        return None  # no trial's end is known
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def _length(trial: dict[str, Any] | None) -> int | None:
    return len(trial["rounds"]) if trial is not None and not trial.get("unfinished") else None


def _unfinished(trials: list[dict[str, Any]]) -> int:
    return sum(1 for t in trials if t.get("unfinished"))


_SWEEP_WHY = (
    "under V1 a trial reserves its workers' resources, so only as many trials run as the cluster "
    "holds; under V2 a trial reserves none (its run waits for workers), so every trial starts at "
    "once. For V1's schedule under V2 cap TuneConfig(max_concurrent_trials=N)"
)


def compare_sweep(
    index: int,
    experiment: str,
    v1: list[dict[str, Any]],
    v2: list[dict[str, Any]],
    pairs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]],
) -> FitComparison:
    """A sweep as a whole: its trials, how long each ran, how many ran at once."""
    first = (v1 or v2)[0]
    record = {"trainer": "Tuner", "run_name": experiment, "call_site": first.get("call_site"), "sweep": True}
    out = FitComparison(index, {**record, "trials": len(v1)}, {**record, "trials": len(v2)})

    def check(aspect: str, a: Any, b: Any, section: int | None, why: str) -> None:
        out.rows.append((aspect, a, b))
        if a != b:
            out.differences.append(Difference(aspect, a, b, section, why))

    check("trials", len(v1), len(v2), None, "the sweep ran another number of trials")
    # A trial Tune stopped before its fit() returned: its end and rounds are unknown to compare.
    out.rows.append(("trials stopped before their fit() returned", _unfinished(v1), _unfinished(v2)))
    concurrency = most_at_once(v1), most_at_once(v2)
    check("most trials at once", *concurrency, 24, _SWEEP_WHY)
    both = [(a, b) for a, b in pairs if a is not None and b is not None]  # a missing trial is "trials"
    lengths = [_length(a) for a, _ in both], [_length(b) for _, b in both]
    check(
        "trial lengths (rounds of each trial, paired)",
        *lengths,
        24 if concurrency[0] != concurrency[1] else None,
        "a scheduler (ASHA, PBT, a stopper) stops a trial by the results that have arrived, and "
        "another number of trials at once changes which have"
        if concurrency[0] != concurrency[1]
        else "the same concurrency, yet trials ran to other lengths (a scheduler acting on timing?)",
    )
    return out


# Aspects that follow from how many rounds a trial ran.
_LENGTH_BOUND = {
    "after_report calls",
    "every worker's reports",
    "checkpoints (count)",
    "checkpoint metrics (validation merged)",
    "validation status",
    "result.metrics",
    "metrics_dataframe rows",
    "checkpoint directories",
    "run directory",
}


def _explain_dying_reports(fit: FitComparison) -> FitComparison:
    """A retried run: whether a failing attempt's last report reaches compat before its worker
    dies is a race (docs/compatibility.md §21). When the two runs' reports differ only so (a
    worker of an attempt that failed has one report more under one setting, the rest the same,
    the last attempt identical), what differs for that reason is explained, not UNEXPLAINED."""
    if fit.v1 is None or fit.v2 is None or not any(d.section is None for d in fit.differences):
        return fit
    sides = _reports_by_worker(fit.v1), _reports_by_worker(fit.v2)
    attempts = {attempt for side in sides for attempt, _ in side}
    if len(attempts) < 2:
        return fit
    last = max(attempts)
    extra: list[str] = []
    for key in sorted(set(sides[0]) | set(sides[1])):
        a, b = sides[0].get(key, []), sides[1].get(key, [])
        if a == b:
            continue
        short, long_ = sorted((a, b), key=len)
        if key[0] == last or len(long_) - len(short) != 1 or long_[: len(short)] != short:
            return fit  # not only a dying attempt's last report
        extra.append(f"attempt {key[0]} rank {key[1]}: 1 report more under {'V1' if long_ is a else 'V2'}")
    if not extra:
        return fit
    why = "a failing attempt's last report arrived under one setting only (timing: " + "; ".join(extra) + ")"
    for difference in fit.differences:
        if difference.section is None and difference.aspect in _LENGTH_BOUND | {"metrics_dataframe values"}:
            difference.section, difference.why = 21, why
    return fit


def _reports_by_worker(fit: Mapping[str, Any]) -> dict[tuple[int, int], list[Any]]:
    """Each worker's reports, by (attempt, world rank), in order, without their bookkeeping."""
    found: dict[tuple[int, int], list[Any]] = {}
    for report in fit["worker_reports"]:
        key = (int(report.get("attempt", 0)), int(report.get("world_rank", 0)))
        found.setdefault(key, []).append({k: v for k, v in report.items() if k != "report_index"})
    return found


def _explain_trial_length(fit: FitComparison, sweep: FitComparison) -> FitComparison:
    """A trial the sweep stopped at another point: the shorter run is the longer one's first
    rounds, so what differs because of its length is explained as the sweep's lengths are."""
    lengths = next((d for d in sweep.differences if d.aspect.startswith("trial lengths")), None)
    if fit.v1 is None or fit.v2 is None or lengths is None or lengths.section is None:
        return fit
    short, long_ = sorted((_calls(fit.v1), _calls(fit.v2)), key=len)
    if len(short) == len(long_) or long_[: len(short)] != short:
        return fit
    why = f"the trial ran {len(fit.v1['rounds'])} rounds under V1, {len(fit.v2['rounds'])} under V2 (the sweep's row)"
    for difference in fit.differences:
        if difference.section is None and difference.aspect in _LENGTH_BOUND:
            difference.section, difference.why = lengths.section, why
    return fit
