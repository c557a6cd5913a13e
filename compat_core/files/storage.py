"""A run directory on the run's own ``pyarrow.fs`` filesystem.

Everything compat reads or writes in a run directory goes through here, resolved as Ray
resolves ``RunConfig(storage_path, storage_filesystem)``: a custom filesystem takes the
path as given; otherwise pyarrow resolves the URI (``s3://``, ``gs://``, ``file://``) or
local path. Nothing is written relative to the working directory.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

import pyarrow.fs as pafs

# V1's checkpoint directories: ``checkpoint_00000N``.
V1_CHECKPOINT = re.compile(r"checkpoint_(\d+)")


@dataclass(frozen=True)
class RunStorage:
    """``run_dir`` is a path on ``filesystem`` (not a URI)."""

    filesystem: Any
    run_dir: str

    def path(self, name: str) -> str:
        return posixpath.join(self.run_dir, name)

    def exists(self, name: str = "") -> bool:
        info = self.filesystem.get_file_info(self.path(name) if name else self.run_dir)
        return bool(info.type != pafs.FileType.NotFound)

    def entries(self) -> list[pafs.FileInfo]:
        """What the directory holds (nothing when it does not exist)."""
        if not self.exists():
            return []
        return list(self.filesystem.get_file_info(pafs.FileSelector(self.run_dir, recursive=False)))

    def has_entries(self) -> bool:
        return bool(self.entries())

    def read_text(self, name: str) -> str | None:
        if not self.exists(name):
            return None
        with self.filesystem.open_input_stream(self.path(name)) as f:
            return bytes(f.read()).decode()

    def write_text(self, name: str, text: str) -> None:
        self.filesystem.create_dir(self.run_dir, recursive=True)
        with self.filesystem.open_output_stream(self.path(name)) as f:
            f.write(text.encode())

    def read_lines(self, name: str) -> Generator[str, None, None]:
        """The lines of ``name``, streamed (none when it does not exist)."""
        if not self.exists(name):
            return
        with self.filesystem.open_input_stream(self.path(name)) as f:
            yield from io.TextIOWrapper(f, encoding="utf-8")

    def write_lines(self, name: str, lines: Iterable[str]) -> None:
        """``name`` written from ``lines`` as they come (never whole in memory)."""
        self.filesystem.create_dir(self.run_dir, recursive=True)
        with self.filesystem.open_output_stream(self.path(name)) as f:
            text = io.TextIOWrapper(f, encoding="utf-8")
            text.writelines(lines)
            text.flush()
            text.detach()  # the stream is closed by its own ``with``

    def appends(self) -> bool:
        """Whether the filesystem appends to a file (a local one, also under a sub-tree); an
        object store rewrites the whole object instead."""
        filesystem = self.filesystem
        while isinstance(filesystem, pafs.SubTreeFileSystem):
            filesystem = filesystem.base_fs
        return isinstance(filesystem, pafs.LocalFileSystem)

    def append_text(self, name: str, text: str) -> None:
        """Append (flushed on close, so ``tail -f`` sees each row); filesystems without
        appends (object stores) get the file rewritten with the new text at its end."""
        if not self.exists(name):
            self.write_text(name, text)
            return
        try:
            with self.filesystem.open_append_stream(self.path(name)) as f:
                f.write(text.encode())
        except (NotImplementedError, OSError):  # pyarrow raises a NotImplementedError subclass
            self.write_text(name, (self.read_text(name) or "") + text)

    def move_aside(self, name: str) -> str | None:
        """Rename ``name`` to the first free ``name.N``; returns the new name."""
        if not self.exists(name):
            return None
        n = 1
        while self.exists(f"{name}.{n}"):
            n += 1
        self.filesystem.move(self.path(name), self.path(f"{name}.{n}"))
        return f"{name}.{n}"

    def __str__(self) -> str:
        return f"{self.run_dir} on {type(self.filesystem).__name__}"


def checkpoint_dir_name(checkpoint: Any) -> str:
    """The directory a (persisted) checkpoint lives in: ``checkpoint_000003``, ``checkpoint_<ts>``."""
    return posixpath.basename(str(checkpoint.path).rstrip("/"))


def default_storage_path() -> str:
    """Ray's default ``storage_path`` (``~/ray_results``), as Ray's ``RunConfig`` reads it."""
    from ray.train.constants import DEFAULT_STORAGE_PATH

    return str(DEFAULT_STORAGE_PATH)


def root(
    storage_path: str | os.PathLike[str] | None, storage_filesystem: Any = None, default: str | None = None
) -> str:
    """The ``storage_path`` a run uses, as compat hands it to Ray: ``default`` (Ray's default
    unless given) when unset; a local path made absolute, ``~`` expanded (Ray's storage takes
    no relative path: raw Ray fails on one, compat resolves it against the working directory,
    docs/compatibility.md §22); a URI, or a path on a custom filesystem, as given."""
    if storage_path is None:
        return default if default is not None else default_storage_path()
    path = os.fspath(storage_path)
    if storage_filesystem is not None or "://" in path:
        return path
    return os.path.abspath(os.path.expanduser(path))


def resolve(storage_path: str | os.PathLike[str] | None, storage_filesystem: Any, name: str) -> RunStorage:
    """The run directory ``<storage_path>/<name>`` on the filesystem Ray would use."""
    path = root(storage_path, storage_filesystem)
    if storage_filesystem is not None:
        return RunStorage(storage_filesystem, posixpath.join(path, name))
    filesystem, base = pafs.FileSystem.from_uri(path)  # a URI's query configures the filesystem
    return RunStorage(filesystem, posixpath.join(base, name))


def _uri(path: str) -> SplitResult | None:
    """``path``'s parts when it is a URI (``scheme://...``), its query kept apart from its path
    (``s3://bucket/dir?region=x&endpoint_override=http://host:port``); None for a plain path."""
    if "://" not in path.split("?", 1)[0]:
        return None
    return urlsplit(path)


def join(base: str, *names: str) -> str:
    """``base/names...``; for a URI, joined to its path, its query (and fragment) kept at the end."""
    parts = _uri(base)
    if parts is None:
        return posixpath.join(base, *names)
    return urlunsplit(parts._replace(path=posixpath.join(parts.path or "/", *names)))


def split(path: str | os.PathLike[str], filesystem: Any = None) -> tuple[str, str]:
    """A directory's path as ``(storage_path, name)``, as ``RunConfig`` names it; a local path
    made absolute, as Ray makes it (a path on ``filesystem`` is taken as given); a URI split in
    its path, its query kept with the storage path."""
    text = os.fspath(path)
    parts = _uri(text) if filesystem is None else None
    if parts is not None:
        parent, name = posixpath.split(parts.path.rstrip("/"))
        return urlunsplit(parts._replace(path=parent.rstrip("/"))), name
    parent, name = posixpath.split(text.rstrip("/"))
    return root(parent or ".", filesystem), name


def at(path: str | os.PathLike[str], filesystem: Any = None) -> RunStorage:
    """The directory ``path`` (a local path or a URI; a path on ``filesystem`` when given)."""
    storage_path, name = split(path, filesystem)
    return resolve(storage_path, filesystem, name)
