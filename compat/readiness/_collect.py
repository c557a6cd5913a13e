"""What ``compat readiness`` reads: the readiness records of runs (in local directories or on
any ``pyarrow.fs`` filesystem: ``s3://``, ``gs://``, ``file://``), source trees (the codemod's
findings, nothing rewritten) and the installed distributions (``--site-packages``).

A location that cannot be read, or a record that is not one, becomes a :class:`Problem`
naming the path and what it holds; everything else is still read.
"""

from __future__ import annotations

import os
import posixpath
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pyarrow.fs as pafs

from compat.readiness import _record as readiness
from compat.readiness._record import RECORD_FILE, RunRecord
from compat_core import messages
from migrate import engine as codemod
from migrate import formats
from migrate.files import SKIP_DIRS
from migrate.files import special_kind as kind_of_mode
from migrate.formats import Finding

# Never searched for records (nor a checkpoint_* directory: it holds the user's files).
_NOT_RUNS = frozenset(SKIP_DIRS - {"site-packages"})
# Distributions whose own code is Ray's, or compat's: not a third party that blocks the flip.
_OWN = frozenset({"ray", "ray-train-compat"})


@dataclass(frozen=True)
class Problem:
    """A location or file that could not be read as what it was taken for."""

    path: str
    message: str


@dataclass(frozen=True)
class Source:
    """A repository (a source tree) or an installed distribution, with the codemod's findings."""

    name: str
    kind: str  # "repository" or "package"
    path: str
    version: str | None
    files: int
    findings: tuple[Finding, ...]


@dataclass
class Collected:
    records: list[RunRecord] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # With --site-packages: how many installed distributions were read (the blocking ones are sources).
    packages_read: int | None = None


def collect(locations: Iterable[str], *, site_packages: bool = False, jobs: int = 1) -> Collected:
    """Read every location (a run storage location, a source tree, a record file, a URI).
    Each path that cannot be read is one :class:`Problem` with the OS's reason, however many
    locations reach it; a record file reached twice is read once."""
    found = Collected()
    trees: list[str] = []
    read: set[str] = set()  # record files read, by absolute path

    def read_records(path: str, shown: str) -> None:
        if os.path.abspath(path) not in read:
            read.add(os.path.abspath(path))
            _parse(_read_local(os.path.abspath(path)), shown, found)

    for location in locations:
        if "://" in location:
            _records_at_uri(location, found)
        elif not os.path.lexists(location):
            found.problems.append(Problem(location, "does not exist"))
        elif not os.path.exists(location):
            found.problems.append(Problem(location, "is a broken symbolic link"))
        elif (kind := special_kind(location)) is not None:
            found.problems.append(Problem(location, f"is {kind}, not a file or directory: skipped"))
        elif os.path.isfile(location):
            if os.path.basename(location) == RECORD_FILE:
                read_records(location, location)
            elif location.endswith((".py", ".ipynb")):
                trees.append(location)
            else:
                found.problems.append(
                    Problem(location, f"is a file, but neither a {RECORD_FILE} nor a Python file or notebook")
                )
        else:
            records, sources, unreadable = _walk(location)
            found.problems.extend(unreadable)
            for record in records:
                read_records(record, record)
            if sources:
                trees.append(location)
            elif not records and not unreadable:
                found.problems.append(
                    Problem(
                        location,
                        f"holds no run's {RECORD_FILE} and no Python file (not a run storage or a source tree)",
                    )
                )
    for tree in dict.fromkeys(os.path.abspath(t) for t in trees):
        found.sources.extend(_repositories(tree, jobs))
    if site_packages:
        found.sources.extend(_packages(jobs, found))
    # A source file the codemod could not read (its reason, e.g. "cannot read: Permission denied").
    found.problems.extend(
        Problem(f.path, f.message) for s in found.sources for f in s.findings if f.kind == "error" and unread(f)
    )
    found.problems[:] = list(dict.fromkeys(found.problems))  # once each, in the order met
    return found


def unread(finding: Finding) -> bool:
    """A codemod error that is a file it could not read (not one that does not parse)."""
    return finding.message.startswith(("cannot read:", "cannot read notebook:"))


def _walk(root: str) -> tuple[list[str], bool, list[Problem]]:
    """The record files under ``root``, whether it holds source files (one walk), and each
    directory the walk could not read, with the OS's reason."""
    records: list[str] = []
    sources = False
    unreadable: list[Problem] = []

    def failed(error: OSError) -> None:
        unreadable.append(Problem(str(error.filename or root), f"cannot be read ({error.strerror})"))

    for directory, dirs, files in os.walk(root, onerror=failed):
        dirs[:] = [d for d in dirs if d not in _NOT_RUNS and not d.startswith("checkpoint_")]
        if RECORD_FILE in files:
            records.append(os.path.join(directory, RECORD_FILE))
        if not sources and any(name.endswith((".py", ".ipynb")) for name in files):
            sources = True
    return sorted(records), sources, unreadable


def _records_at_uri(uri: str, found: Collected) -> None:
    try:
        filesystem, root = pafs.FileSystem.from_uri(uri)
        info = filesystem.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            found.problems.append(Problem(uri, "does not exist"))
            return
        if info.type == pafs.FileType.File:
            paths = [root] if posixpath.basename(root) == RECORD_FILE else []
        else:
            entries = filesystem.get_file_info(pafs.FileSelector(root, recursive=True))
            paths = sorted(e.path for e in entries if posixpath.basename(e.path) == RECORD_FILE)
    except Exception as exc:  # pyarrow's errors differ by filesystem; each names what failed
        found.problems.append(Problem(uri, f"cannot be read ({type(exc).__name__}: {exc})"))
        return
    if not paths:
        found.problems.append(Problem(uri, f"holds no run's {RECORD_FILE}: not a run storage location"))
    scheme = uri.split("://", 1)[0]
    # An object store answers each read in a round trip: many at once (results in path order).
    with ThreadPoolExecutor(max_workers=16) as pool:
        texts = list(pool.map(lambda path: _read_text(filesystem, path), paths))
    for path, text in zip(paths, texts, strict=True):
        _parse(text, f"{scheme}://{path}", found)


MAX_RECORD_FILE_BYTES = 256 * 1024 * 1024  # a record is about 2 KB a fit: over 100,000 fits


class _NotRead(Exception):
    """A record file skipped, not failed: ``str()`` says why."""


def special_kind(path: str) -> str | None:
    """What ``path`` is when it is neither a regular file nor a directory (symlinks followed):
    "a FIFO", "a socket", "a device" (the codemod's words for them); None otherwise (or when it
    cannot be looked at)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else kind_of_mode(mode)


def _read_local(path: str) -> str | Exception:
    """A local record file's text: opened without blocking and checked through its descriptor to
    be a regular file (a FIFO, socket or device is never read) of at most
    :data:`MAX_RECORD_FILE_BYTES`."""
    import stat

    kind = special_kind(path)  # a socket cannot even be opened
    if kind is not None:
        return _NotRead(messages.record_file_of_kind(kind))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _NotRead(messages.record_file_of_kind(special_kind(path) or "not a regular file"))
        if info.st_size > MAX_RECORD_FILE_BYTES:
            return _NotRead(messages.record_file_too_big(info.st_size, MAX_RECORD_FILE_BYTES, local=True))
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read().decode("utf-8", errors="replace")  # a bad line is named, the rest read
    except (OSError, UnicodeDecodeError) as exc:
        return exc
    finally:
        os.close(fd)


def _read_text(filesystem: Any, path: str) -> str | Exception:
    try:
        info = filesystem.get_file_info(path)
        if info.size is not None and info.size > MAX_RECORD_FILE_BYTES:
            return _NotRead(messages.record_file_too_big(info.size, MAX_RECORD_FILE_BYTES, local=False))
        with filesystem.open_input_stream(path) as f:
            return bytes(f.read()).decode("utf-8", errors="replace")
    except Exception as exc:  # reported with the path; the other records are still read
        return exc


def _parse(text: str | Exception, shown: str, found: Collected) -> None:
    if isinstance(text, _NotRead):
        found.problems.append(Problem(shown, str(text)))
        return
    if isinstance(text, Exception):
        found.problems.append(Problem(shown, f"cannot be read ({_reason(text)})"))
        return
    records, problems = readiness.parse_numbered(text)
    found.records.extend(records)
    found.problems.extend(Problem(f"{shown}:{number}", message) for number, message in problems)


def _reason(error: Exception) -> str:
    """An error as the OS says it ("Permission denied"), else its class and message."""
    if isinstance(error, OSError) and error.errno:  # pyarrow's carry errno, and a long strerror
        return os.strerror(error.errno)
    return f"{type(error).__name__}: {error}"


def _repositories(tree: str, jobs: int) -> Iterator[Source]:
    """A source tree's repositories: each directory under it with a ``.git`` (a checkout), and
    the tree itself for the files outside them."""
    results = _check([tree], jobs, configured=True)
    roots = sorted(_git_roots(tree), key=len, reverse=True)
    grouped: dict[str, list[codemod.FileResult]] = {}
    for result in results:
        absolute = os.path.abspath(result.path)
        root = next((r for r in roots if absolute.startswith(r + os.sep)), os.path.abspath(tree))
        grouped.setdefault(root, []).append(result)
    for root, group in sorted(grouped.items()):
        yield Source(
            name=os.path.basename(root.rstrip(os.sep)) or root,
            kind="repository",
            path=root,
            version=None,
            files=len(group),
            findings=tuple(formats.findings(group, pending_fixes=True)),
        )


def _git_roots(tree: str) -> list[str]:
    if os.path.isfile(tree):
        return []
    roots = []
    for directory, dirs, _ in os.walk(tree):
        if ".git" in dirs or os.path.isfile(os.path.join(directory, ".git")):
            roots.append(os.path.abspath(directory))
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
    return roots


def _packages(jobs: int, found: Collected) -> Iterator[Source]:
    """The running environment's installed distributions that use V1-only Ray APIs: every
    distribution's Python files in one run of the codemod, its findings grouped back."""
    owners, places = package_files()
    found.packages_read = len(places)
    counts = Counter(name for name, _ in owners.values())
    by_dist: dict[tuple[str, str], list[codemod.FileResult]] = {}
    for result in _check(list(owners), jobs, configured=False):
        if result.diagnostics:  # a file that does not parse is no blocker of a package (Python 2 leftovers)
            by_dist.setdefault(owners[result.path], []).append(result)
    for (name, version), group in sorted(by_dist.items(), key=lambda item: item[0][0].lower()):
        findings = tuple(f for f in formats.findings(group, pending_fixes=True) if f.kind != "error")
        yield Source(name, "package", places[name], version, counts[name], findings)


def package_files() -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """Every Python file of the installed distributions (Ray's and compat's aside): file ->
    (distribution, version); and where each distribution is installed (the directory holding
    its metadata: its site-packages, also for an editable install)."""
    owners: dict[str, tuple[str, str]] = {}
    places: dict[str, str] = {}
    seen: set[str] = set()
    for dist in metadata.distributions():
        meta = dist.metadata  # parsed on each access: once per distribution
        name, version = meta["Name"] or "", meta["Version"] or ""
        key = name.lower().replace("_", "-")
        if not key or key in seen or key in _OWN:
            continue
        seen.add(key)
        places[name] = os.path.abspath(str(dist.locate_file("")))
        for file in dist.files or ():
            if file.suffix in (".py", ".ipynb"):
                path = str(dist.locate_file(file))
                if path not in owners and os.path.isfile(path):
                    owners[path] = (name, version)
    return owners, places


def _check(paths: list[str], jobs: int, *, configured: bool) -> list[codemod.FileResult]:
    from migrate.__main__ import check

    return check(paths, jobs=jobs, configured=configured)
