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
from pathlib import Path

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
    whatever it says (the caller applies ``--force-exclude``, as ruff does)."""
    skip = excluded or (lambda path: False)
    for root in paths:
        if os.path.isfile(root):
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


class Unreadable(Exception):
    """A file the codemod cannot read as text; the message says why and what to do."""


def read_source(path: str) -> Source:
    """``path``'s text in its own encoding (a notebook's is UTF-8), or :class:`Unreadable`."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror}") from exc
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
    return Source(text, encoding, bom)
