"""Every run's readiness record: which V1-only behaviours one ``fit()`` relied on, kept with
the run, for ``python -m compat readiness`` to sum over a fleet (docs/readiness.md).

Each compat ``fit()`` appends one JSON line to ``compat_readiness.jsonl`` in its run's
directory, through the run's own filesystem, as it returns or raises: a re-run or a restored
run with the same directory adds a line and keeps the earlier ones. The line is versioned
(``schema``, ``version``); a reader refuses a newer version with an error that says so, and
ignores fields it does not know (a later minor addition).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from compat_core import messages, settings
from compat_core.errors import CompatError

RECORD_FILE = "compat_readiness.jsonl"
SCHEMA = "ray-train-compat/readiness"
VERSION = 1
JOB_ENV_VAR = settings.JOB_NAME.name
OUTCOMES = (
    "succeeded",
    "failed",
    "callback-failed",
    "stopped",
    "unfinished",
)  # unfinished: a Tune trial's, as its fit starts
SEVERITIES = ("breaks", "silent", "warns", "fix")  # worst first, as the codemod's


class RecordError(CompatError, ValueError):
    """A readiness record that cannot be read: not JSON, not a record, or a newer schema."""


@dataclass(frozen=True)
class Behaviour:
    """One V1-only behaviour a run relied on: how often, where first, what it does on raw V2
    (``severity``) and what removes it (``rule``: a codemod rule code, or None)."""

    kind: str
    count: int
    first_site: str
    severity: str
    rule: str | None = None
    advice: str = ""


@dataclass(frozen=True)
class RunRecord:
    """What one ``fit()`` leaves in its run directory. Times are seconds since the epoch
    (stored as ISO 8601 in UTC)."""

    job: str
    run: str
    path: str
    script: str
    call_site: str
    trainer: str
    ray_version: str
    compat_version: str
    python_version: str
    mode: str  # the semantics: "v1" or "v2"
    engine: str  # Ray's engine that ran it: "v1" or "v2"
    started_at: float
    ended_at: float
    outcome: str  # one of OUTCOMES
    error: str | None = None
    behaviours: tuple[Behaviour, ...] = field(default=())

    @property
    def worst(self) -> str | None:
        """The worst severity among the behaviours; None for a run that relied on none."""
        found = {b.severity for b in self.behaviours}
        return next((s for s in SEVERITIES if s in found), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": VERSION,
            "job": self.job,
            "run": self.run,
            "path": self.path,
            "script": self.script,
            "call_site": self.call_site,
            "trainer": self.trainer,
            "versions": {"ray": self.ray_version, "compat": self.compat_version, "python": self.python_version},
            "mode": self.mode,
            "engine": self.engine,
            "started_at": _iso(self.started_at),
            "ended_at": _iso(self.ended_at),
            "outcome": self.outcome,
            "error": self.error,
            "behaviours": [
                {
                    "kind": b.kind,
                    "count": b.count,
                    "first_site": b.first_site,
                    "severity": b.severity,
                    "rule": b.rule,
                    "advice": b.advice,
                }
                for b in self.behaviours
            ],
        }

    def line(self) -> str:
        return json.dumps(self.to_json(), sort_keys=False) + "\n"


def from_json(data: Any) -> RunRecord:
    """A record from its JSON; :class:`RecordError` says what is wrong with one that is not."""
    if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
        raise RecordError(messages.not_a_readiness_record(SCHEMA))
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise RecordError(messages.readiness_record_version(version))
    if version > VERSION:
        raise RecordError(messages.readiness_record_too_new(version, VERSION))
    try:
        versions = _mapping(data, "versions")
        return RunRecord(
            job=_text(data, "job", required=True),
            run=_text(data, "run", required=True),
            path=_text(data, "path", required=True),
            script=_text(data, "script"),
            call_site=_text(data, "call_site"),
            trainer=_text(data, "trainer"),
            ray_version=_text(versions, "ray", "versions.ray"),
            compat_version=_text(versions, "compat", "versions.compat"),
            python_version=_text(versions, "python", "versions.python"),
            mode=_choice(data, "mode", MODES, required=True),
            engine=_choice(data, "engine", MODES) or _choice(data, "mode", MODES, required=True),
            started_at=_epoch(data, "started_at"),
            ended_at=_epoch(data, "ended_at"),
            outcome=_choice(data, "outcome", OUTCOMES, required=True),
            error=_text(data, "error", optional=True),
            behaviours=tuple(_behaviour(b, f"behaviours[{i}]") for i, b in enumerate(_list(data, "behaviours"))),
        )
    except KeyError as exc:
        raise RecordError(messages.readiness_field_missing(exc.args[0])) from None


MODES = ("v1", "v2")


def _malformed(field: str, value: Any, wanted: str) -> RecordError:
    shown = json.dumps(value, allow_nan=True, default=str)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return RecordError(messages.readiness_field_malformed(field, shown, wanted))


def _text(
    data: Mapping[str, Any], key: str, name: str | None = None, *, required: bool = False, optional: bool = False
) -> Any:
    """A string field (``optional``: None allowed; ``required``: missing is an error, else "")."""
    if key not in data:
        if required:
            raise KeyError(name or key)
        return None if optional else ""
    value = data[key]
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _malformed(name or key, value, "a string" + (" or null" if optional else ""))
    return value


def _choice(
    data: Mapping[str, Any], key: str, allowed: tuple[str, ...], *, required: bool = False, name: str | None = None
) -> str:
    """A field that is one of ``allowed`` (``name``: how the error names it, default ``key``)."""
    if key not in data and not required:
        return ""
    value = _text(data, key, name, required=True)
    if value not in allowed:
        raise _malformed(name or key, value, "one of " + ", ".join(allowed))
    return str(value)


def _mapping(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _malformed(key, value, "an object")
    return value


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _malformed(key, value, "a list")
    return value


def _behaviour(data: Any, name: str) -> Behaviour:
    if not isinstance(data, Mapping):
        raise _malformed(name, data, "an object")
    count = data.get("count")
    if "count" not in data:
        raise KeyError(f"{name}.count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise _malformed(f"{name}.count", count, "a whole number of times (0 or more)")
    return Behaviour(
        kind=_text(data, "kind", f"{name}.kind", required=True),
        count=count,
        first_site=_text(data, "first_site", f"{name}.first_site"),
        severity=_choice(data, "severity", SEVERITIES, required=True, name=f"{name}.severity"),
        rule=_text(data, "rule", f"{name}.rule", optional=True),
        advice=_text(data, "advice", f"{name}.advice"),
    )


def parse_lines(text: str) -> tuple[list[RunRecord], list[str]]:
    """The records of a ``compat_readiness.jsonl``, and a message for each line that is not
    one (``line N: ...``); a blank line is skipped, the others are still read."""
    records, problems = parse_numbered(text)
    return records, [f"line {number}: {message}" for number, message in problems]


def parse_numbered(text: str) -> tuple[list[RunRecord], list[tuple[int, str]]]:
    """:func:`parse_lines`, each problem as its line's number and what is wrong with it."""
    records: list[RunRecord] = []
    problems: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(from_json(json.loads(line)))
        except json.JSONDecodeError as exc:
            what = exc.msg.removesuffix(" at")  # json's "Unterminated string starting at" names no place
            problems.append((number, f"not JSON ({what} at column {exc.colno}; a write cut short?)"))
        except RecordError as exc:
            problems.append((number, str(exc)))
        except RecursionError:  # json's parser on a line nested thousands deep
            problems.append((number, "not a readiness record (nested too deeply to read)"))
    return records, problems


def job_name(run_name: str | None, script: str, environ: Mapping[str, str] = os.environ) -> str:
    """What a fleet groups runs by: ``COMPAT_JOB_NAME`` when set (a scheduler's job id), else
    the ``RunConfig(name=...)`` the program gave, else the script's name (a notebook's path
    under Jupyter, ``python -c`` for a command)."""
    given = settings.JOB_NAME.get(environ)
    if given:
        return given
    if run_name:
        return run_name
    notebook = environ.get("JPY_SESSION_NAME", "").strip()
    if notebook:
        return os.path.splitext(os.path.basename(notebook))[0]
    if script in ("", "-c"):
        return "python -c"
    stem = os.path.splitext(os.path.basename(script))[0]
    if stem == "__main__":  # python -m package: the package's name
        return os.path.basename(os.path.dirname(script)) or stem
    return stem or script


def script_name() -> str:
    """The program the process runs: ``sys.argv[0]`` made absolute (``-c`` for a command)."""
    notebook = os.environ.get("JPY_SESSION_NAME", "").strip()
    if notebook:
        return notebook
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "-c"
    return argv0 if argv0 in ("-c", "-m") else os.path.abspath(argv0)


def python_version() -> str:
    return platform.python_version()


def compat_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("ray-train-compat")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def behaviours(usages: Iterable[Any]) -> tuple[Behaviour, ...]:
    """Records of a run's :class:`compat_core.migration.usage.Usage` list, worst first."""
    found = [Behaviour(u.kind, u.count, u.first_site, u.severity, u.rule, u.advice) for u in usages]
    return tuple(sorted(found, key=lambda b: (SEVERITIES.index(b.severity), b.kind)))


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _epoch(data: Mapping[str, Any], key: str) -> float:
    """A time field: seconds since the epoch, or ISO 8601 (UTC when it names no zone); one that
    is no time a date can hold (infinite, not a number, past year 9999) is malformed."""
    if key not in data:
        raise KeyError(key)
    value = data[key]
    seconds: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value
        try:
            parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=timezone.utc)
            seconds = parsed.timestamp()
        except (ValueError, OverflowError):
            seconds = None
    if seconds is not None:
        try:
            _iso(seconds)  # what every format writes it as
            return seconds
        except (ValueError, OverflowError, OSError):
            pass
    raise _malformed(key, value, "a time (ISO 8601, or seconds since 1970)")
