"""``compat.migration_report(results)``: the migration report of a Ray Tune sweep
(``ResultGrid``) or of one of its trials' ``Result``, read from the readiness records its
trials left in their directories (a compat ``Result`` reports itself).

Tune's own result classes are Ray's: compat does not add a method to them, it reads what each
trial's ``fit()`` recorded where Tune put the trial (its ``path`` on its ``filesystem``)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from compat.readiness import _record as records
from compat_core import messages, switch
from compat_core.migration import v1_only
from compat_core.semantics.result import Result


@dataclass
class _Merged:
    """One behaviour over the trials: counts summed, the first trial's site, how many trials."""

    kind: str
    severity: str
    count: int
    first_site: str
    rule: str | None
    advice: str
    trials: int = 1


def migration_report(results: Any) -> str:
    """The V1-only behaviours a sweep's trials (a ``ray.tune.ResultGrid``) or one trial (its
    ``Result``) relied on, worst first, from the trials' readiness records; a compat ``Result``
    gives its own ``migration_report()``. Raises ``TypeError`` for anything else."""
    if isinstance(results, Result):
        return results.migration_report()
    from ray.tune import ResultGrid

    if isinstance(results, ResultGrid):
        trials = [results[i] for i in range(len(results))]
        title = f"Sweep {posixpath.basename(str(results.experiment_path).rstrip('/'))!r} ({len(trials)} trials)"
    elif hasattr(results, "path") and hasattr(results, "metrics_dataframe"):  # a Ray Result: a trial's
        trials = [results]
        title = f"Trial {posixpath.basename(str(results.path).rstrip('/'))!r}"
    else:
        raise TypeError(messages.migration_report_takes(type(results).__name__))
    found = [_last_record(trial) for trial in trials]
    kept = [r for r in found if r is not None]
    return _render(title, kept, missing=len(found) - len(kept))


def _last_record(trial: Any) -> records.RunRecord | None:
    """The trial's record as it ended (its directory's last line; None without one, or when its
    storage cannot be read)."""
    from compat_core.files.storage import RunStorage

    path, filesystem = str(trial.path), getattr(trial, "filesystem", None)
    if filesystem is None:
        import pyarrow.fs

        filesystem, path = pyarrow.fs.FileSystem.from_uri(path if "://" in path else posixpath.abspath(path))
    try:
        text = RunStorage(filesystem, path).read_text(records.RECORD_FILE)
    except OSError:
        return None
    parsed = records.parse_lines(text or "")[0]
    return parsed[-1] if parsed else None


def _merged(kept: Iterable[records.RunRecord]) -> list[_Merged]:
    by_kind: dict[str, _Merged] = {}
    for record in kept:
        for b in record.behaviours:
            seen = by_kind.get(b.kind)
            if seen is None:
                by_kind[b.kind] = _Merged(b.kind, b.severity, b.count, b.first_site, b.rule, b.advice)
            else:
                seen.count += b.count
                seen.trials += 1
    return list(by_kind.values())


def _under_v2(record: records.RunRecord) -> bool:
    try:
        return switch.Generation(record.mode) is switch.V2
    except ValueError:  # a record of a mode this compat does not know
        return False


def _render(title: str, kept: list[records.RunRecord], *, missing: int) -> str:
    total = len(kept) + missing
    behaviours = _merged(kept)
    flipped = bool(kept) and all(_under_v2(r) for r in kept)
    if not kept:
        lines = [f"{title}: no trial left a readiness record (not a compat trainer's, or its storage cannot be read)."]
    elif not behaviours:
        same = "gives what it would under V1" if flipped else "behaves the same under V2"
        lines = [f"{title}: no V1-only behaviour recorded in its trials: it {same}."]
    else:
        head = (
            "changed by the flip: its trials have V2's semantics and relied on behaviours V1 gives otherwise"
            if flipped
            else "V1-only behaviours its trials relied on (they change when V2 is on)"
        )
        lines = [f"{title}, {head}, worst first:"]
        lines += v1_only.report_lines(behaviours, lambda b: f" in {b.trials} of {total} trials" if total > 1 else "")
        lines.append(v1_only.REPORT_FOOTER)
    early = sum(r.outcome in ("stopped", "unfinished") for r in kept)
    if early:
        lines.append(
            f"{early} of {total} trials ended early (stopped by Tune, or their process ended): their records hold the "
            "behaviours known when their fit started (the configs'), not those their workers reported after."
        )
    if missing and kept:
        lines.append(f"{missing} of {total} trials left no readiness record: nothing is known of them.")
    return "\n".join(lines)
