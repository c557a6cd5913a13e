"""The worker's side of the channel: :class:`Sender`, a worker's one connection for its records
(kept until the ledger has stored them) and its votes; :class:`Answers`, its answer connection;
whether workers use the channel at all (:func:`in_use`)."""

from __future__ import annotations

import contextlib
import pickle
import socket
import struct
import time
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

from compat_core import settings
from compat_core.run.channel import wire


def in_use() -> bool:
    """Whether workers send their records on the channel (``COMPAT_RECORD_CHANNEL``, default
    ``socket``; ``actor``: by actor calls)."""
    return settings.RECORD_CHANNEL.get() == "socket"


class Sender:
    """In a worker: one connection to the ledger, or ``None`` from :func:`connect`. Keeps each
    message it wrote, by the record index the caller gives, until :meth:`stored_through`."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.broken = False
        self._kept: deque[tuple[int, Any]] = deque()
        self._limit = wire.max_bytes()

    def send(self, message: Any, index: int = 0) -> bool:
        """Write ``message`` (the record of index ``index``); False when it could not be (the
        caller then uses an actor call, after sending again what is :meth:`unconfirmed`)."""
        from ray import cloudpickle

        if self.broken:
            return False
        try:
            data = cloudpickle.dumps(message)  # type: ignore[no-untyped-call]  # untyped in Ray
        except Exception:
            return False
        if len(data) > self._limit:  # the host would close the connection: an actor call takes it
            return False
        if not self._write(data):
            return False
        self._kept.append((index, message))
        return True

    def vote(self, attempt: int, index: int, rank: int, free: bool) -> bool:
        """Write rank ``rank``'s free-round vote (not kept: a rank whose connection breaks votes
        again by an actor call); False when it could not be written."""
        return not self.broken and self._write(pickle.dumps((wire.VOTE, attempt, index, rank, free)))

    def _write(self, data: bytes) -> bool:
        """``data`` onto the connection; False (and broken from now on) when it cannot be."""
        try:
            self._connection.send_bytes(data)
        except OSError as exc:
            self.broken = True
            wire.logger.info("compat's record channel broke (%s); using actor calls", exc)
            return False
        return True

    def stored_through(self, index: int) -> None:
        """The ledger has stored every record before ``index``: they are forgotten."""
        while self._kept and self._kept[0][0] < index:
            self._kept.popleft()

    def kept(self) -> int:
        """How many written messages are not yet known to be stored."""
        return len(self._kept)

    def needed(self) -> int:
        """The index the ledger's ``stored_through`` must reach for every written message to be
        known stored (one past the last kept)."""
        return self._kept[-1][0] + 1 if self._kept else 0

    def unconfirmed(self) -> list[Any]:
        """The messages written and not known to be stored, in order; the sender forgets them."""
        messages = [message for _, message in self._kept]
        self._kept.clear()
        return messages

    def close(self) -> None:
        try:
            self._connection.close()
        except OSError:
            pass


class Answers:
    """In a worker: its answer connection, on which the ledger writes the decisions of the
    rounds it voted in, in the order they were made."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.broken = False

    def wait(self, attempt: int, index: int, timeout_s: float) -> bool | None:
        """Round ``(attempt, index)``'s decision (True: free); None when none came within
        ``timeout_s`` or the connection broke (the worker then asks by an actor call).
        Decisions of earlier rounds (the worker asked for them instead) are skipped."""
        deadline = time.monotonic() + timeout_s
        while not self.broken:
            left = deadline - time.monotonic()
            try:
                if left <= 0 or not self._connection.poll(left):
                    return None
                decided_attempt, decided_index, free = wire.DECISION.unpack(self._connection.recv_bytes())
            except (OSError, EOFError, struct.error) as exc:
                self.broken = True
                wire.logger.info("compat's answer connection broke (%s); asking by actor calls", exc)
                return None
            if (decided_attempt, decided_index) == (attempt, index):
                return bool(free)
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._connection.close()


def connect(address: wire.Address | None) -> Sender | None:
    """Connect to the ledger at ``address``; None (use actor calls) when that fails."""
    connection = _connect(address)
    return None if connection is None else Sender(connection)


def connect_answers(address: wire.Address | None, rank: int) -> Answers | None:
    """Rank ``rank``'s answer connection to the ledger at ``address``; None (the rank votes by
    actor calls) when that fails."""
    connection = _connect(address)
    if connection is None:
        return None
    try:
        connection.send_bytes(pickle.dumps((wire.ANSWERS, rank)))
    except OSError:
        connection.close()
        return None
    return Answers(connection)


def _connect(address: wire.Address | None) -> Connection | None:
    """A connection to the ledger at ``address`` that passed the key challenge both ways."""
    if address is None:
        return None
    host, port, key = address
    started = time.monotonic()
    try:
        sock = socket.create_connection((host, port), timeout=wire.CONNECT_TIMEOUT_S)
    except Exception as exc:
        wire.logger.info("compat's record channel to %s:%s is unavailable (%s); using actor calls", host, port, exc)
        return None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # records are small: send each at once
        sock.settimeout(None)
        left = wire.CONNECT_TIMEOUT_S - (time.monotonic() - started)  # connect and key: one timeout
        wire.challenge(sock, key, server=False, within=max(left, 0.001))
        connection = Connection(sock.detach())
    except Exception as exc:
        sock.close()
        wire.logger.info("compat's record channel to %s:%s is unavailable (%s); using actor calls", host, port, exc)
        return None
    return connection
