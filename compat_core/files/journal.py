"""A run ledger's journal: an append-only log of what the ledger was told, written before the
ledger counts it (a write-ahead log, as etcd and Kafka keep theirs), on the driver node's local
disk, outside the ledger's host process. A restarted host rebuilds the run from it
(``replay.reopen``); a host lost for good leaves it to the driver (``replay.recover``).

Each event is one frame: a 4-byte big-endian length and the event pickled (Ray's cloudpickle:
records carry checkpoints and workers' exceptions). A frame is written with one ``os.write`` on
a file opened for appending, so a host process that dies leaves every event written before it
whole; a frame cut short (the host died inside the write) is ignored by the reader. The file
outlives the process, not the machine: nothing is ``fsync``-ed (the driver's node going away
ends the run anyway). docs/architecture.md states the contract.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickletools
import struct
import threading
import warnings
from collections import deque
from collections.abc import Collection, Iterator
from typing import Any

from compat_core import messages
from compat_core.files import pickled, private

_LENGTH = struct.Struct(">I")
# A frame whose length has this bit is a record as its worker pickled it, ``(record, validation)``
# (Journal.append_records): read back as the event ``("record", record, validation)``.
_SENT = 0x80000000
JOURNAL_SUFFIX = ".journal"  # a run's, while its ledger has it
RESULT_SUFFIX = ".result"  # a closed run's, while its driver's snapshot has it
logger = logging.getLogger(__name__)


class Journal:
    """Appends events to ``path`` (created with its directory, private to this user:
    compat_core.files.private; a symlink at ``path`` is refused)."""

    def __init__(self, path: str) -> None:
        private.ensure_private(os.path.dirname(path) or ".")
        self.path = path
        self._fd: int | None = private.open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._lock = threading.Lock()
        self._failed: set[Any] = set()  # the kinds of event it could not keep (logged once)

    def append(self, *event: Any) -> bool:
        """Write ``event``; whether it was. One that cannot be pickled or written costs its
        durability, never the run: it is logged (once per kind of event) and the ledger goes on
        without it (keeping in memory what it must hand over: a record)."""
        from ray import cloudpickle

        try:
            data = cloudpickle.dumps(event)  # type: ignore[no-untyped-call]
        except Exception as exc:
            self._warn_once(event[0], exc)
            return False
        if len(data) >= _SENT:
            self._warn_once(event[0], ValueError(f"an event of {len(data):,} bytes (2 GiB at most)"))
            return False
        return self._write(_LENGTH.pack(len(data)) + data, event[0])

    def append_records(self, sent: list[bytes]) -> bool:
        """Write records' events from the bytes their workers sent (each ``(record,
        validation)``, pickled), with one write: what the channel received is kept as it is,
        not pickled again."""
        if any(len(data) >= _SENT for data in sent):
            return False  # over 2 GiB: the caller journals it the usual way
        return self._write(b"".join(_LENGTH.pack(len(data) | _SENT) + data for data in sent), "record")

    def _write(self, frame: bytes, kind: Any) -> bool:
        try:
            with self._lock:
                if self._fd is None:
                    return False  # closed: the run is over
                written = os.write(self._fd, frame)
                while written < len(frame):  # a short write (rare on local files): the rest follows
                    written += os.write(self._fd, frame[written:])
            return True
        except Exception as exc:
            self._warn_once(kind, exc)
            return False

    def _warn_once(self, kind: Any, exc: BaseException) -> None:
        if kind not in self._failed:
            self._failed.add(kind)
            logger.warning("compat's run journal %s cannot keep a %r event (%s: %s)", self.path, kind,
                           type(exc).__name__, exc)  # fmt: skip

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def result_path(path: str, pid: int) -> str:
    """Where a closed run's journal goes once its driver (process ``pid``) has the snapshot:
    ``<run>.<pid>.result`` beside it (the snapshot reads the run's reports from it)."""
    return f"{path.removesuffix(JOURNAL_SUFFIX)}.{pid}{RESULT_SUFFIX}"


def is_result(path: str | None) -> bool:
    """Whether ``path`` is a closed run's journal a driver's snapshot owns."""
    return path is not None and path.endswith(RESULT_SUFFIX)


def remove(path: str) -> None:
    """Remove ``path`` (gone already: nothing to do)."""
    with contextlib.suppress(OSError):
        os.remove(path)


def prune(directory: str, max_age_s: float, now: float) -> int:
    """Remove what dead processes left in ``directory``: journals not written for ``max_age_s``
    (of drivers that died before reading them back; a run's own is its driver's once it has its
    snapshot), hosts' indexes of their runs' journals (``.runs``) as old, and the journals of
    snapshots whose driver process is gone (``.<pid>.result``), whatever their age.
    Returns how many went; a journal another process removes first is skipped."""
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        path = os.path.join(directory, name)
        try:
            if name.endswith(RESULT_SUFFIX):
                stale = not _alive(int(name.removesuffix(RESULT_SUFFIX).rpartition(".")[2]))
            else:
                stale = name.endswith((JOURNAL_SUFFIX, ".runs")) and now - os.stat(path).st_mtime > max_age_s
            if stale:
                os.remove(path)
                removed += 1
        except (OSError, ValueError):
            continue
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        return True
    return True


def cut_to_whole_frames(path: str) -> None:
    """Drop a last frame cut short (its writer died inside the write), so that frames appended
    from now on follow the last whole one."""
    with private.open_file(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        end = max((frame_end for _, frame_end, _ in _whole_frames(f, size)), default=0)
    if end < size:
        fd = private.open_fd(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, end)
        finally:
            os.close(fd)


def last(path: str) -> tuple[Any, ...] | None:
    """The journal's last whole event, reading only the frames' lengths before it."""
    with private.open_file(path, "rb") as f:
        frames = deque(_whole_frames(f, os.fstat(f.fileno()).st_size), maxlen=1)
        if not frames:
            return None
        start, end, sent = frames[0]
        f.seek(start)
        return _event(f.read(end - start), sent)


def _whole_frames(f: Any, size: int) -> Iterator[tuple[int, int, bool]]:
    """Where each whole frame's event starts and ends in the journal ``f`` of ``size`` bytes,
    and whether it is a record as sent, reading the lengths only."""
    end = 0
    while len(header := f.read(_LENGTH.size)) == _LENGTH.size:
        length, sent = _unpack(header)
        if end + _LENGTH.size + length > size:
            return
        start, end = end + _LENGTH.size, end + _LENGTH.size + length
        yield start, end, sent
        f.seek(end)


def _unpack(header: bytes) -> tuple[int, bool]:
    """A frame's header: the length of its event, and whether it is a record as sent."""
    (value,) = _LENGTH.unpack(header)
    return value & ~_SENT, bool(value & _SENT)


def _event(data: bytes, sent: bool) -> tuple[Any, ...]:
    """A frame's event: a record as its worker sent it is ``("record", record, validation)``."""
    if sent:
        return ("record", *pickled.loads(data))
    return tuple(pickled.loads(data))


def read(path: str, kinds: Collection[str] | None = None) -> Iterator[tuple[Any, ...]]:
    """The events of the journal at ``path``, in the order they were written, one frame in memory
    at a time; a last frame cut short is skipped.

    ``kinds``: only events of those kinds, the others not even unpickled (a new driver reading a
    killed one's records and validation outcomes passes over events that hold the old cluster's
    actor handles: they load only there); and an event of those kinds that does not load costs
    only itself, with a :class:`~compat_core.files.pickled.CorruptStoredDataWarning` naming the journal and the frame.
    Without ``kinds`` (a host rebuilding its run, on its own cluster), such an event raises."""
    with private.open_file(path, "rb") as f:
        while len(header := f.read(_LENGTH.size)) == _LENGTH.size:
            length, sent = _unpack(header)
            data = f.read(length)
            if len(data) < length:
                return
            if kinds is None:
                yield _event(data, sent)
                continue
            kind = "record" if sent else _kind(data)
            if kind not in kinds:
                continue
            try:
                event = _event(data, sent)
            except Exception as exc:
                at = f.tell() - length - _LENGTH.size
                warnings.warn(
                    messages.journal_event_unreadable(path, kind, at, exc),
                    pickled.CorruptStoredDataWarning,
                    stacklevel=2,
                )
                continue
            yield event


def _kind(data: bytes) -> str | None:
    """An event's kind, read from its pickle without loading it: the first string the pickle
    holds is the kind the tuple starts with (None for a frame of another form)."""
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if isinstance(arg, str) and opcode.name.endswith("UNICODE"):
                return arg
            if opcode.name not in _BEFORE_THE_KIND:
                return None
    except Exception:
        return None
    return None


# What a pickle of ``(kind, ...)`` may hold before the kind's string (protocols 2 to 5).
_BEFORE_THE_KIND = frozenset({"PROTO", "FRAME", "MARK", "EMPTY_TUPLE"})
