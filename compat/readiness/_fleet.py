"""The fleet's readiness, summed from what :mod:`compat.readiness._collect` read: each job
(its runs), repository and installed package, ready or blocked, and the blockers to fix first,
ranked by severity, then by how many jobs, repositories and packages they block."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import PurePath

from compat.readiness._collect import Collected, Problem, Source, unread
from compat.readiness._record import SEVERITIES, Behaviour, RunRecord
from compat_core.migration import v1_only
from migrate.formats import Finding, rule_url
from migrate.rules import BY_CODE

TREND_RUNS = 12  # the runs a job's trend shows, newest last
# The codemod rules whose behaviour compat's runtime records when a run relies on it: for those,
# a job's runs say whether it ran (and was V1-only); for the others, only the source can.
RUNTIME_RULES = frozenset(kind.rule for kind in v1_only.KINDS.values() if kind.rule)


@dataclass(frozen=True)
class Job:
    """Every run of one job (``RunRecord.job``), oldest first, and the codemod's findings in its
    script when a repository read holds it (``source``). One verdict: its latest run's V1-only
    behaviours (the runtime's record of what ran), and the source's findings the runtime cannot
    observe (what never ran, or runs where no record sees it); a source finding the runtime
    records when it runs, which the latest run did not rely on, does not block it (:attr:`why`)."""

    name: str
    runs: tuple[RunRecord, ...]
    source: tuple[Finding, ...] = ()

    @property
    def latest(self) -> RunRecord:
        return self.runs[-1]

    @property
    def ready(self) -> bool:
        return not self.latest.behaviours and not self.source_blockers

    @property
    def blockers(self) -> tuple[Behaviour, ...]:
        """The latest run's V1-only behaviours."""
        return self.latest.behaviours

    @property
    def source_blockers(self) -> tuple[Finding, ...]:
        """The script's findings the runtime cannot observe: they block the job from its source."""
        return tuple(f for f in self.source if f.code not in RUNTIME_RULES)

    @property
    def not_seen_running(self) -> tuple[Finding, ...]:
        """The script's findings the runtime records when they run, which the latest run did not
        rely on: the runs are believed over the source."""
        relied = {b.rule for b in self.blockers}
        return tuple(f for f in self.source if f.code in RUNTIME_RULES and f.code not in relied)

    @property
    def worst(self) -> str | None:
        return worst_of([self.latest.worst, *(f.severity for f in self.source_blockers)])

    @property
    def why(self) -> str:
        """Which record the verdict believes, and why, where the runs and the source disagree."""
        parts = []
        if self.source_blockers:
            sites = ", ".join(f"{f.code} at {_site(f)}" for f in self.source_blockers[:3])
            parts.append(f"its source: {sites} (the runtime cannot observe it: the source is believed)")
        if self.not_seen_running:
            sites = ", ".join(f"{f.code} at {_site(f)}" for f in self.not_seen_running[:3])
            parts.append(
                f"its runs, over the source's {sites}: the runtime records that when it runs, and the latest "
                "run did not rely on it (the runs are believed)"
            )
        return "; ".join(parts)

    @property
    def trend(self) -> tuple[int, ...]:
        """V1-only behaviours relied on (distinct kinds) per run, its last runs, oldest first."""
        return tuple(len(r.behaviours) for r in self.runs[-TREND_RUNS:])


def severity_counts(items: Sequence[Behaviour | Finding]) -> dict[str, int]:
    counts = Counter(i.severity for i in items if i.severity is not None)
    return {s: counts[s] for s in SEVERITIES if counts[s]}


def worst_of(severities: Sequence[str | None]) -> str | None:
    present = set(severities)
    return next((s for s in SEVERITIES if s in present), None)


def source_unread(source: Source) -> int:
    """How many of a source's files could not be read (its verdict is unknown then)."""
    return sum(1 for f in source.findings if f.kind == "error" and unread(f))


def source_ready(source: Source) -> bool:
    """Nothing blocks the flip in a source, and every file of it was read."""
    return not source_blockers(source) and not source_unread(source)


def source_status(source: Source) -> str:
    """``ready``, ``blocked (<worst>)``, or ``unknown`` when a file could not be read."""
    blockers = source_blockers(source)
    if blockers:
        return f"blocked ({worst_of([f.severity for f in blockers])})"
    missing = source_unread(source)
    return f"unknown ({plural(missing, 'file')} not read)" if missing else "ready"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def source_blockers(source: Source) -> tuple[Finding, ...]:
    """A repository's or package's findings (a file the codemod could not read is not one)."""
    return tuple(f for f in source.findings if f.kind != "error")


@dataclass(frozen=True)
class Blocker:
    """One thing to fix, over the fleet: a codemod rule (with the runtime behaviours it finds)
    or a behaviour no rule finds; who it blocks and how to remove it."""

    key: str
    severity: str
    rule: str | None
    kinds: tuple[str, ...]
    jobs: tuple[str, ...]
    repositories: tuple[str, ...]
    packages: tuple[str, ...]
    fix: str

    @property
    def blocked(self) -> int:
        return len(self.jobs) + len(self.repositories) + len(self.packages)


@dataclass(frozen=True)
class Fleet:
    jobs: tuple[Job, ...]
    repositories: tuple[Source, ...]
    packages: tuple[Source, ...]
    blockers: tuple[Blocker, ...]
    problems: tuple[Problem, ...]
    generated_at: float
    packages_read: int | None = None  # installed distributions read (None: --site-packages not given)

    @property
    def nothing_read(self) -> bool:
        """No run, source tree or installed distribution was read: no verdict to give."""
        return not (self.jobs or self.repositories or self.packages_read)

    @property
    def worst(self) -> str | None:
        return worst_of([b.severity for b in self.blockers])

    def trend(self) -> tuple[list[str], dict[str, list[int]]]:
        """Per day (UTC) with a run, for each behaviour: how many jobs relied on it in their
        latest run up to that day. The days, and a count per day for each behaviour."""
        days = sorted({_day(r.ended_at) for j in self.jobs for r in j.runs})
        position = {day: i for i, day in enumerate(days)}
        # A run is its job's latest from its day until the day of the job's next run: each
        # behaviour's count rises there and falls back after (summed up below), so a fleet with
        # a year of daily runs costs its runs and its days, not their product.
        steps: dict[str, list[int]] = {}
        for job in self.jobs:
            for k, run in enumerate(job.runs):
                start = position[_day(run.ended_at)]
                end = position[_day(job.runs[k + 1].ended_at)] if k + 1 < len(job.runs) else len(days)
                for behaviour in run.behaviours if start < end else ():
                    step = steps.setdefault(behaviour.kind, [0] * (len(days) + 1))
                    step[start] += 1
                    step[end] -= 1
        series = {kind: list(itertools.accumulate(step[:-1])) for kind, step in steps.items()}
        return days, dict(sorted(series.items()))


def _site(finding: Finding) -> str:
    return f"{os.path.basename(finding.path)}:{finding.line}"


def _parts(path: str) -> tuple[str, ...]:
    return PurePath(os.path.normpath(path.replace("\\", "/"))).parts


def script_findings(script: str, repositories: Sequence[Source]) -> tuple[Finding, ...]:
    """The findings (not errors) of the file a run's ``script`` is, in the repository whose
    relative path of that file is the longest tail of the script's path (a job runs from a
    checkout elsewhere: the repository read here is another copy of it). None found: ()."""
    tail = _parts(script)
    best: tuple[int, tuple[Finding, ...]] = (0, ())
    for source in repositories:
        by_file: dict[str, list[Finding]] = {}
        for finding in source.findings:
            by_file.setdefault(finding.path, []).append(finding)
        for path, found in by_file.items():
            relative = os.path.relpath(path, source.path) if os.path.isabs(path) == os.path.isabs(source.path) else path
            parts = _parts(relative)
            if parts and parts[0] != ".." and len(parts) <= len(tail) and tail[-len(parts) :] == parts:
                if len(parts) > best[0]:
                    best = (len(parts), tuple(f for f in found if f.kind != "error"))
    return best[1]


def fleet(collected: Collected, *, now: float | None = None) -> Fleet:
    # A fit's record is appended again when the program reads a V1-only part of its result
    # after fit() (compat_core.semantics.reads): the last line of a run and start replaces the earlier.
    latest = {(r.path, r.started_at, r.job): r for r in collected.records}
    by_job: dict[str, list[RunRecord]] = {}
    for record in latest.values():
        by_job.setdefault(record.job, []).append(record)
    repositories = tuple(s for s in collected.sources if s.kind == "repository")
    jobs = []
    for name, runs in sorted(by_job.items()):
        ordered = tuple(sorted(runs, key=lambda r: (r.ended_at, r.started_at, r.path)))
        jobs.append(Job(name, ordered, script_findings(ordered[-1].script, repositories)))
    packages = tuple(s for s in collected.sources if s.kind == "package")
    return Fleet(
        jobs=tuple(jobs),
        repositories=repositories,
        packages=packages,
        blockers=_blockers(jobs, repositories, packages),
        problems=tuple(collected.problems),
        packages_read=collected.packages_read,
        generated_at=datetime.now(timezone.utc).timestamp() if now is None else now,
    )


def _blockers(jobs: Sequence[Job], repositories: Sequence[Source], packages: Sequence[Source]) -> tuple[Blocker, ...]:
    rows: dict[str, dict[str, set[str]]] = {}
    severity: dict[str, str] = {}

    def row(key: str, sev: str) -> dict[str, set[str]]:
        if key not in severity or SEVERITIES.index(sev) < SEVERITIES.index(severity[key]):
            severity[key] = sev
        return rows.setdefault(key, {"kinds": set(), "jobs": set(), "repositories": set(), "packages": set()})

    for job in jobs:
        for behaviour in job.blockers:
            entry = row(behaviour.rule or behaviour.kind, behaviour.severity)
            entry["kinds"].add(behaviour.kind)
            entry["jobs"].add(job.name)
        for finding in job.source_blockers:
            row(finding.code, finding.severity or "breaks")["jobs"].add(job.name)
    for group, sources in (("repositories", repositories), ("packages", packages)):
        for source in sources:
            for finding in source_blockers(source):
                row(finding.code, finding.severity or "breaks")[group].add(source.name)
    blockers = [
        Blocker(
            key=key,
            severity=severity[key],
            rule=key if key in BY_CODE else None,
            kinds=tuple(sorted(entry["kinds"])),
            jobs=tuple(sorted(entry["jobs"])),
            repositories=tuple(sorted(entry["repositories"])),
            packages=tuple(sorted(entry["packages"])),
            fix=_fix(
                key,
                entry["kinds"],
                on_compat=bool(entry["jobs"]),
                in_sources=bool(entry["repositories"] or entry["packages"]),
            ),
        )
        for key, entry in rows.items()
    ]
    blockers.sort(
        key=lambda b: (SEVERITIES.index(b.severity), -len(b.jobs), -len(b.repositories), -len(b.packages), b.key)
    )
    return tuple(blockers)


def _fix(key: str, kinds: set[str], *, on_compat: bool = False, in_sources: bool = True) -> str:
    """How to remove it: the codemod rule's name, the command that finds it in the code as it
    is, and the rule's page; or the behaviour's advice. A job's runs are compat's (only compat
    records them), and the codemod's default target skips a file that imports only compat:
    there the command is ``--target compat``'s; a source tree's findings, the default's."""
    rule = BY_CODE.get(key)
    if rule is not None:
        verb = "rewrites it" if rule.fix_safety != "none" else "flags it"
        commands = []
        if in_sources or not on_compat:
            commands.append(f"`python -m migrate` {verb}")
        if on_compat and "compat" in rule.targets:
            where = "in code on compat" if in_sources else "in the jobs' code (on compat)"
            commands.append(f"`python -m migrate --target compat` {verb} {where}")
        return f"{rule.name}: {'; '.join(commands) or f'`python -m migrate` {verb}'} ({rule_url(key)})"
    advice = [v1_only.KINDS[k].instead for k in sorted(kinds) if k in v1_only.KINDS]
    return advice[0] if advice else ""


def _day(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d")
