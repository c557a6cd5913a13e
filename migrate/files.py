"""The files the codemod reads and writes: discovery under the paths given (VCS directories,
virtualenvs and ``site-packages`` skipped; ``--exclude`` globs), a file's text in its own
encoding, and an atomic write that keeps the file's mode, encoding and BOM."""

from __future__ import annotations

import io
import os
import re
import stat
import tempfile
import tokenize
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch

_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)  # PEP 263


SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "env", ".tox", ".nox", "site-packages", "node_modules",
     "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)  # fmt: skip


def atomic_write(path: str, data: bytes, *, bom: bool = False) -> None:
    """Write via a temporary file in the same directory; keep the mode and a BOM."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".migrate-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write((b"\xef\xbb\xbf" if bom else b"") + data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def iter_files(paths: Iterable[str], excluded: Callable[[str], bool] | None = None) -> Iterator[str]:
    """Python files and notebooks under ``paths``, skipping VCS dirs, venvs, site-packages, and
    the directories and files ``excluded`` rules out. A file named in ``paths`` is yielded
    whatever it says (the caller applies ``--force-exclude``, as ruff does), as is a FIFO,
    socket or device there or under them (:func:`read_source` reports it, never opened)."""
    skip = excluded or (lambda path: False)
    for root in paths:
        if os.path.isfile(root) or (os.path.exists(root) and not os.path.isdir(root)):
            yield root
            continue
        if not os.path.isdir(root):
            raise FileNotFoundError(root)
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(
                d for d in dirs if d not in SKIP_DIRS and not _is_venv(os.path.join(directory, d))
                and not skip(os.path.join(directory, d))
            )  # fmt: skip
            for name in sorted(files):
                full = os.path.join(directory, name)
                if name.endswith((".py", ".pyi", ".ipynb")) and not skip(full):
                    yield full


def _is_venv(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, "pyvenv.cfg"))


def matches_globs(path: str, patterns: Sequence[str]) -> bool:
    """``path`` (as given, ``./`` dropped) or its file name matches one of the globs."""
    normalized = path.replace(os.sep, "/").removeprefix("./")
    return any(fnmatch(normalized, p) or fnmatch(os.path.basename(path), p) for p in patterns)


@dataclass(frozen=True)
class Source:
    """A file's text, and how to write it back: its encoding (a PEP 263 declaration's, else
    UTF-8) and whether it starts with a UTF-8 BOM."""

    text: str
    encoding: str = "utf-8"
    bom: bool = False
    size: int = 0  # bytes on disk


READ_AT_MOST = 256 * 1024 * 1024
"""No file larger than this is read at all (a data dump, a model): every other file is read, and
the size limit (MAX_FILE_BYTES) applies only to one the text pre-filter selects: a large file that
never names Ray costs a read and a substring scan, and is no error (engine.process_file)."""


class Unreadable(Exception):
    """A file the codemod cannot read as text; the message says why and what to do.
    ``recordable``: a fact of the file's content (its size, its encoding), which ``--add-noqa``
    records as known; not a FIFO, a device or a file the process may not read."""

    def __init__(self, message: str, *, recordable: bool = True) -> None:
        super().__init__(message)
        self.recordable = recordable


MAX_FILE_BYTES = 512 * 1024
"""The largest file read by default (``--max-file-size``, ``max-file-size``): hand-written
Python is far smaller; a larger one is generated code, whose rewrite through libcst's tree
takes hundreds of bytes of memory and about 0.3 ms per byte of dense literals (a 100 KB data
file that imports Ray: about 30 s; docs/performance.md)."""


def read_source(path: str, max_bytes: int = MAX_FILE_BYTES) -> Source:
    """``path``'s text in its own encoding (a notebook's is UTF-8), or :class:`Unreadable`: a
    FIFO, socket or device is never read (opened without blocking and checked through its
    descriptor), nor a file over ``max_bytes``."""
    try:
        if not stat.S_ISREG(mode := os.stat(path).st_mode):  # a socket cannot even be opened
            raise Unreadable(f"is {special_kind(mode)}, not a regular file; skipped", recordable=False)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror}", recordable=False) from exc
    try:
        info = os.fstat(fd)  # what was opened, whatever the path names now
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"is {special_kind(info.st_mode)}, not a regular file; skipped", recordable=False)
        if info.st_size > max(max_bytes, READ_AT_MOST):
            raise Unreadable(too_large(info.st_size, max(max_bytes, READ_AT_MOST)))
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror}", recordable=False) from exc
    finally:
        os.close(fd)
    bom = raw.startswith(b"\xef\xbb\xbf")
    encoding = "utf-8"
    if not bom and not path.endswith(".ipynb"):
        try:  # a PEP 263 declaration (`# -*- coding: latin-1 -*-`) names the file's encoding
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as exc:  # an unknown declared encoding; or no declaration and not UTF-8
            if _CODING.search(b"\n".join(raw.split(b"\n", 2)[:2])):
                raise Unreadable(f"{exc.msg}; skipped") from exc
    try:
        text = raw.decode("utf-8-sig" if bom else encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding == "utf-8" else encoding
        raise Unreadable(
            f"not {name} (byte {exc.start}); declare the encoding (PEP 263) or convert the file; skipped"
        ) from exc
    return Source(text, encoding, bom, len(raw))


def too_large(size: int, limit: int, what: str = "") -> str:
    return (
        f"is {size:,} bytes{what}, over the largest file read ({limit:,} bytes: generated code?); "
        "skipped. Exclude it, or raise the limit with --max-file-size or max-file-size in "
        '[tool.ray-train-migrate] (per-file-ignores = ["ERROR"] records it as known)'
    )


def special_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` that is not a regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


_SIZE = re.compile(r"(\d+)\s*(|b|kb|kib|mb|mib|gb|gib)", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2, "gb": 1000**3, "gib": 1024**3}


def parse_size(value: object) -> int:
    """A size as ``--max-file-size`` and ``max-file-size`` take it: bytes (``4194304``) or with
    a unit (``4MiB``, ``500KB``); ``ValueError`` saying what is accepted."""
    match = _SIZE.fullmatch(str(value).strip()) if not isinstance(value, bool) else None
    if match is None or int(match.group(1)) < 1:
        raise ValueError(f"{value!r} is not a size: give bytes (e.g. 4194304) or a number with KB, MB, KiB or MiB")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]
