"""The channel's wire: how a message is framed (``multiprocessing.connection``'s frames, read
back incrementally by :class:`Incoming`), the tagged messages a worker writes besides its
records, the decision a ledger writes back, and the HMAC key exchange both sides make
(:func:`challenge`). Shared by the ledger's side (:mod:`.server`) and the worker's (:mod:`.client`)."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import struct
import threading
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

from compat_core import settings

ENV_VAR = settings.RECORD_CHANNEL.name
MAX_BYTES_VAR = settings.RECORD_MAX_BYTES.name
# A connection's whole key exchange, on either side: a worker that has not connected and proved
# the key within it uses actor calls; the host drops a peer that has not proved it within it.
CONNECT_TIMEOUT_S = 5.0

Address = tuple[str, int, bytes]  # host, port, key
# What a worker writes besides its records (``(record, validation)`` pairs): tagged tuples.
ANSWERS = "answers"  # ("answers", rank): the first message of a rank's answer connection
VOTE = "vote"  # ("vote", attempt, index, rank, free): a rank's free-round vote
# A decision the ledger writes on an answer connection: attempt, report index, free.
DECISION = struct.Struct("!qq?")
READ_SIZE = 256 * 1024  # what one read takes of a connection at most
SIZE = struct.Struct("!i")  # multiprocessing.connection's frame: a length, then the bytes
LONG_SIZE = struct.Struct("!Q")  # after a length of -1: a record over 2 GiB

logger = logging.getLogger(__package__)  # one logger for the channel, both sides


def tagged(message: Any, tag: str) -> bool:
    """Whether ``message`` is the tagged tuple ``(tag, ...)`` (a record is a pair of objects)."""
    return type(message) is tuple and bool(message) and message[0] == tag


def max_bytes() -> int:
    """The largest message the channel carries (``COMPAT_RECORD_MAX_BYTES``, default 512 MiB): a
    worker sends a larger record by an actor call, and the host closes a connection that announces
    one (or a negative length) instead of reading it."""
    return settings.RECORD_MAX_BYTES.get()


class BadFrame(Exception):
    """A connection announced a message the channel does not carry."""


class Incoming:
    """What one connection has sent and the reading loop has not handed on: the messages it
    completes, in order. Each byte is copied once into the buffer (a message announced larger
    than a read is received into a buffer of its size), so reading is linear in what is read."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()  # frames' headers and small messages
        self._body: bytearray | None = None  # the large message being received, whole size
        self._filled = 0  # how much of ``_body`` has been received

    def receive(self, sock: socket.socket) -> bool:
        """One read from ``sock`` (raises ``BlockingIOError`` when it has nothing); False when its
        peer closed its end."""
        if self._body is not None:
            view = memoryview(self._body)[self._filled :]
            count = sock.recv_into(view, min(len(view), 4 * READ_SIZE))
            self._filled += count
            return count > 0
        data = sock.recv(READ_SIZE)
        self._buffer += data
        return bool(data)

    def messages(self) -> list[bytes]:
        """The messages now whole, oldest first (raises :class:`BadFrame` on a length the
        channel does not carry: the connection is closed, the rest of it unread)."""
        done: list[bytes] = []
        if self._body is not None:
            if self._filled < len(self._body):
                return done
            done.append(bytes(self._body))
            self._body = None
        start = 0
        buffer = self._buffer
        while True:
            framed = header(buffer, start, self._limit)
            if framed is None:
                break
            begin, size = framed
            end = begin + size
            if end <= len(buffer):
                done.append(bytes(buffer[begin:end]))
                start = end
                continue
            if size > READ_SIZE:  # the rest straight into a buffer of its own
                self._body = bytearray(size)
                have = len(buffer) - begin
                self._body[:have] = buffer[begin:]
                self._filled = have
                start = len(buffer)
            break
        del buffer[:start]
        return done


def header(buffer: bytearray, start: int, limit: int) -> tuple[int, int] | None:
    """Where the message that starts at ``start`` of ``buffer`` (as ``Connection.send_bytes``
    frames them) begins and how long it is; None while its header is not whole."""
    if len(buffer) - start < SIZE.size:
        return None
    (size,) = SIZE.unpack_from(buffer, start)
    begin = start + SIZE.size
    if size == -1:
        if len(buffer) - begin < LONG_SIZE.size:
            return None
        (size,) = LONG_SIZE.unpack_from(buffer, begin)
        begin += LONG_SIZE.size
    if size < 0:
        raise BadFrame(f"it announced a message of {size} bytes")
    if size > limit:
        raise BadFrame(f"it announced a message of {size:,} bytes, over {MAX_BYTES_VAR}={limit:,}")
    return begin, size


def shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def challenge(sock: socket.socket, key: bytes, *, server: bool, within: float | None = None) -> None:
    """Both sides prove they hold ``key`` (``multiprocessing.connection``'s HMAC exchange; the
    host challenges first), on a copy of the socket's descriptor, within ``within`` seconds
    (default :data:`CONNECT_TIMEOUT_S`) for the whole exchange (the socket is shut down when
    they are up)."""
    if within is None:
        within = CONNECT_TIMEOUT_S
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        shut(sock)

    deadline = threading.Timer(within, expire)
    deadline.daemon = True
    deadline.start()
    connection = Connection(os.dup(sock.fileno()))
    try:
        if server:
            deliver_challenge(connection, key)
            answer_challenge(connection, key)
        else:
            answer_challenge(connection, key)
            deliver_challenge(connection, key)
    except Exception:
        if expired.is_set():
            raise TimeoutError(f"the key exchange took over {within:g} s") from None
        raise
    finally:
        deadline.cancel()
        connection.close()
    if expired.is_set():
        raise TimeoutError(f"the key exchange took over {within:g} s")
