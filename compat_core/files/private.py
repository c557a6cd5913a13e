"""compat's state on this node, private to the user who runs it.

compat keeps a run's journal (which a restarted ledger host and the driver read back with
cloudpickle) and the staged copies of V1's logs (uploaded to the run's storage) on the local disk
of the driver's node. Under a shared temporary directory a fixed path would let another local
user create it first, or plant a file or symlink in it, and have compat read, overwrite or upload
what they put there (CWE-377, and CWE-502 through the journal). So that state lives in one
directory per user, as tmux and ssh-agent keep theirs:

- ``$COMPAT_STATE_DIR`` when set, else ``<tempdir>/ray-train-compat-<uid>``;
- created with mode 0700 by one ``mkdir`` (atomic: it fails if anything is already there);
- an existing one is used only when it is a real directory (not a symlink), owned by this user and
  writable by nobody else; anything else is refused with :class:`UnsafeStateDirectoryError`,
  which says what to do;
- every directory above it, as ssh checks the directories above its files: owned by this user or
  root, writable by nobody else unless sticky (``/tmp``), so nobody else can rename it away and
  put their own in its place;
- every file in it is opened relative to its directory, opened without following a symlink and
  checked again through the descriptor opened (:func:`open_fd`): what is read is what was checked.

Nobody else can then create, replace or remove a name inside it, so nothing compat reads back
from it was written by another user. docs/architecture.md "Threat model" says the whole contract.
"""

from __future__ import annotations

import os
import stat
import tempfile
from typing import IO, Any

from compat_core import messages, settings
from compat_core.errors import UnsafeStateDirectoryError

ENV_VAR = settings.STATE_DIR.name


def state_dir(kind: str, override: str | None = None) -> str:
    """``<base>/<kind>`` (``journals``, ``staging``), the base ``$COMPAT_STATE_DIR`` or
    ``<tempdir>/ray-train-compat-<uid>``; ``override`` (a module's setting for tests): that
    directory instead. Created private if missing, checked if there:
    :class:`UnsafeStateDirectoryError` when another user could write to it."""
    if override is not None:
        ensure_private(override, configured=True)
        return override
    configured = settings.STATE_DIR.get()
    if configured:
        base = configured
    else:
        base = os.path.join(tempfile.gettempdir(), f"ray-train-compat-{os.geteuid()}")
    ensure_private(base, configured=bool(configured))
    path = os.path.join(base, kind)
    ensure_private(path)
    return path


def ensure_private(path: str, *, configured: bool = False) -> None:
    """Create the directory ``path`` with mode 0700, or check the one there: a directory, not a
    symlink, owned by this user, writable by nobody else. ``configured``: the user named it
    (``COMPAT_STATE_DIR``): its parents are theirs to create."""
    if configured:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    unsafe = _unsafe_parent(path)
    if unsafe is not None:
        parent, why = unsafe
        raise UnsafeStateDirectoryError(messages.unsafe_state_parent(path, parent, why, ENV_VAR))
    try:
        os.mkdir(path, 0o700)
        return  # ours, as created: mkdir makes nothing where a name exists, a symlink included
    except FileExistsError:
        pass
    info = os.lstat(path)
    problem = _problem(info)
    if problem is not None:
        raise UnsafeStateDirectoryError(messages.unsafe_state_dir(path, problem, ENV_VAR))


def _unsafe_parent(path: str) -> tuple[str, str] | None:
    """The first directory above ``path`` (symlinks resolved) that another user could rename
    ``path`` in, and why; None when there is none."""
    parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    while True:
        info = os.stat(parent)
        if info.st_uid not in (0, os.geteuid()):
            return parent, f"it belongs to user id {info.st_uid}, neither you (user id {os.geteuid()}) nor root"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return parent, f"other users can write to it and it is not sticky (mode {stat.S_IMODE(info.st_mode):04o})"
        above = os.path.dirname(parent)
        if above == parent:
            return None
        parent = above


def _problem(info: os.stat_result) -> str | None:
    """Why a directory with ``info`` (from ``lstat``) is not private to this user; None if it is."""
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if info.st_uid != os.geteuid():
        return f"it belongs to user id {info.st_uid}, not to you (user id {os.geteuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"other users can write to it (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_fd(path: str, flags: int, mode: int = 0o600) -> int:
    """``os.open(path, flags)`` refusing a symlink at ``path`` (``OSError`` ``ELOOP``), opened
    relative to its directory, itself opened without following a symlink and checked private
    through that descriptor (:class:`UnsafeStateDirectoryError` if it is not: the directory was
    replaced since it was checked); files it creates are readable by this user only."""
    directory, name = os.path.split(path)
    directory_fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC)
    try:
        problem = _problem(os.fstat(directory_fd))
        if problem is not None:
            raise UnsafeStateDirectoryError(messages.unsafe_state_dir(directory, problem, ENV_VAR))
        return os.open(name, flags | os.O_NOFOLLOW | _CLOEXEC, mode, dir_fd=directory_fd)
    finally:
        os.close(directory_fd)


_FLAGS = {"r": os.O_RDONLY, "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND}


def open_file(path: str, mode: str = "r", encoding: str | None = None) -> IO[Any]:
    """``open(path, mode)`` (``r``, ``w`` or ``a``, with ``b`` for bytes) without following a
    symlink at ``path``; a file it creates is readable by this user only."""
    if "b" not in mode and encoding is None:
        encoding = "utf-8"
    return os.fdopen(open_fd(path, _FLAGS[mode[0]]), mode, encoding=encoding)
