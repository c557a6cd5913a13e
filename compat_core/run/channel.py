"""A direct line from each worker to its run ledger, for the records of its reports.

A Ray actor call costs about 0.25 ms of CPU in the caller and as much again in the actor
(measured on the project's machine); one per worker per report round made compat's
checkpoint rounds 16-40% slower than raw Ray's on two cores. Records are small and only
ever flow one way, so each worker writes them to a socket the ledger listens on: a few
microseconds a record, in report order, and, once written, delivered by the kernel even if
Ray kills the worker right after (an actor call's submission is asynchronous and may not be).

The socket is a ``multiprocessing.connection`` with its HMAC challenge: only a holder of the
run's random key (the ledger hands it to the run's workers, through Ray) can send. A ledger
that cannot listen, a worker that cannot reach its address (a firewall between nodes), a
record that cannot be pickled, a broken connection, or ``COMPAT_RECORD_CHANNEL=actor`` means
actor calls; the ledger ignores a record it already has, so a resend never counts twice.

A record written is not yet stored: the ledger's host may die before reading it. The sender
keeps what it wrote until the worker learns, by an actor call now and then
(compat_core.run.worker), that the ledger has stored it (:meth:`Sender.stored_through`); what
it still keeps when the connection breaks or the worker ends unconfirmed is sent again by
actor calls, which Ray delivers to a restarted host. The socket stays one-way: a reply on it
would make a worker killed with the reply unread reset the connection, and the ledger would
lose what it had not read yet.

The v2 free-round vote (compat_core.run.ledger.votes) travels the same way: a rank writes its
vote on its record connection, and reads the round's decision on a second connection of its own,
its *answer connection*, on which the ledger writes decisions only (:class:`Answers`). A waiting
rank so holds no call in the ledger's host (an actor call waiting per rank cost the host about
100 KB a rank, docs/performance.md "Width"). A connection that breaks, or no decision within the
vote's timeout, and the rank asks by an actor call instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import secrets
import selectors
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

ENV_VAR = "COMPAT_RECORD_CHANNEL"
_CONNECT_TIMEOUT_S = 5.0

Address = tuple[str, int, bytes]  # host, port, key
# What a worker writes besides its records (``(record, validation)`` pairs): tagged tuples.
ANSWERS = "answers"  # ("answers", rank): the first message of a rank's answer connection
VOTE = "vote"  # ("vote", attempt, index, rank, free): a rank's free-round vote
# A decision the ledger writes on an answer connection: attempt, report index, free.
_DECISION = struct.Struct("!qq?")


def _tagged(message: Any, tag: str) -> bool:
    """Whether ``message`` is the tagged tuple ``(tag, ...)`` (a record is a pair of objects)."""
    return type(message) is tuple and bool(message) and message[0] == tag


logger = logging.getLogger(__name__)


def wanted() -> bool:
    """Whether workers should use the channel (``COMPAT_RECORD_CHANNEL``, default ``socket``)."""
    from compat_core import messages
    from compat_core.errors import InvalidSwitchValueError

    value = os.environ.get(ENV_VAR, "socket").strip().lower()
    if value not in ("socket", "actor"):
        raise InvalidSwitchValueError(messages.invalid_record_channel(ENV_VAR, os.environ[ENV_VAR]))
    return value == "socket"


class Listener:
    """In the ledger's process: accepts workers and hands their records to ``deliver``, each
    with the bytes it came as, in the order each worker wrote them. One thread reads every
    worker's connection (a selector loop: whatever the run's width, the listener holds two
    threads, this one and one that answers new connections' key challenges), reading whatever
    each ready connection has in one call and delivering the records they complete as one batch
    (the ledger journals a batch with one write). ``deliver`` must return quickly: the ledger
    stores the records and leaves the callbacks to its delivery thread. Votes go to ``vote``, after
    the records read with them; :meth:`push` writes a decision to a rank's answer connection."""

    def __init__(
        self,
        host: str,
        deliver: Callable[[list[tuple[Any, bytes]]], None],
        vote: Callable[[int, int, int, bool], None] | None = None,
    ) -> None:
        self._key = secrets.token_bytes(32)
        self._vote = vote  # (attempt, index, rank, free), after the records read with it
        self._answers: dict[int, socket.socket] = {}  # rank -> its answer connection
        self._ranks: dict[socket.socket, int] = {}  # answer connection -> its rank
        self._unsent: dict[int, bytes] = {}  # rank -> a decision pushed before its connection came
        self._answers_lock = threading.Lock()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._server = socket.create_server((host, 0), family=family, backlog=socket.SOMAXCONN)
        self._host = host
        self._deliver = deliver
        self._closed = False
        self._selector = selectors.DefaultSelector()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._wake_reader.setblocking(False)
        self._joining: deque[socket.socket] = deque()  # answered the challenge: for the loop to add
        self._selector.register(self._wake_reader, selectors.EVENT_READ, None)
        self._reader = threading.Thread(target=self._read_loop, name="compat-channel-read", daemon=True)
        self._reader.start()
        threading.Thread(target=self._accept_loop, name="compat-channel-accept", daemon=True).start()

    @property
    def address(self) -> Address:
        return (self._host, self._server.getsockname()[1], self._key)

    def close(self) -> None:
        """Stop accepting and delivering; returns once the batch being delivered is."""
        self._closed = True
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone does not)
        except OSError:
            pass
        self._server.close()
        self._wake()
        if threading.current_thread() is not self._reader:
            self._reader.join()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")

    def _accept_loop(self) -> None:
        """Accepts connections and has each prove it holds the run's key (a blocking exchange,
        bounded by :data:`_CONNECT_TIMEOUT_S`), then hands it to the reading loop."""
        while not self._closed:
            try:
                sock, _ = self._server.accept()
            except OSError:
                return  # closed
            try:
                _challenge(sock, self._key)
            except Exception as exc:  # a wrong key, a client that never answers, not our protocol
                logger.warning("compat's record channel refused a connection: %s", exc)
                sock.close()
                continue
            sock.setblocking(False)
            self._joining.append(sock)
            self._wake()

    def _read_loop(self) -> None:
        partial: dict[socket.socket, bytes] = {}  # a record cut by the last read, per connection
        connections: set[socket.socket] = set()
        try:
            while not self._closed:
                batch: list[tuple[Any, bytes]] = []
                for key, _ in self._selector.select():
                    sock = key.fileobj
                    if sock is self._wake_reader:
                        with contextlib.suppress(OSError):
                            while self._wake_reader.recv(4096):
                                pass
                        while self._joining:
                            joined = self._joining.popleft()
                            connections.add(joined)
                            self._selector.register(joined, selectors.EVENT_READ, None)
                        continue
                    assert isinstance(sock, socket.socket)
                    if not self._read(sock, partial, batch):
                        self._selector.unregister(sock)
                        connections.discard(sock)
                        partial.pop(sock, None)
                        self._forget(sock)
                        sock.close()  # the worker finished (or died): everything it wrote was read
                    if len(batch) >= _BATCH and not self._closed:
                        self._deliver_batch(batch)  # memory: a batch, not every ready connection's reads
                        batch = []
                if batch and not self._closed:
                    self._deliver_batch(batch)
        finally:
            for sock in connections:
                sock.close()
            self._selector.close()
            self._wake_reader.close()
            self._wake_writer.close()

    def _read(self, sock: socket.socket, partial: dict[socket.socket, bytes], batch: list[tuple[Any, bytes]]) -> bool:
        """Read what ``sock`` has, adding each record (and vote) it completes to ``batch``; False
        once the worker closed its end (or the connection broke)."""
        try:
            data = sock.recv(_READ_SIZE)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        data = partial.pop(sock, b"") + data
        start = 0
        while (frame := _frame(data, start)) is not None:
            begin, start = frame
            sent = data[begin:start]
            try:
                message = pickle.loads(sent)
            except Exception:  # one bad record must not stop the others
                logger.exception("compat's record channel could not read a record")
                continue
            if _tagged(message, ANSWERS):
                self._answering(message[1], sock)
            else:
                batch.append((message, sent))
        if start < len(data):
            partial[sock] = data[start:]
        return True

    def _deliver_batch(self, batch: list[tuple[Any, bytes]]) -> None:
        """The batch's records to ``deliver``, then its votes to ``vote``."""
        records = [item for item in batch if not _tagged(item[0], VOTE)]
        try:
            if records:
                self._deliver(records)
        except Exception:
            logger.exception("compat's record channel could not store %d records", len(records))
        if len(records) == len(batch) or self._vote is None:
            return
        for message, _ in batch:
            if _tagged(message, VOTE):
                try:
                    self._vote(*message[1:])
                except Exception:  # the rank asks by an actor call when no decision comes
                    logger.exception("compat's record channel could not count a vote")

    def _answering(self, rank: int, sock: socket.socket) -> None:
        """``sock`` is rank ``rank``'s answer connection (it replaces one the rank had)."""
        with self._answers_lock:
            self._answers[rank] = sock
            self._ranks[sock] = rank
            unsent = self._unsent.pop(rank, None)
        if unsent is not None:
            self._write(rank, sock, unsent)

    def _forget(self, sock: socket.socket) -> None:
        """``sock`` closed: if it was a rank's answer connection, the rank has none."""
        with self._answers_lock:
            rank = self._ranks.pop(sock, None)
            if rank is not None and self._answers.get(rank) is sock:
                del self._answers[rank]

    def push(self, rank: int, attempt: int, index: int, free: bool) -> bool:
        """Write round ``(attempt, index)``'s decision to rank ``rank``'s answer connection;
        False when it could not be (the rank, hearing nothing, asks by an actor call). A rank
        whose connection has not been read yet is written to when it is."""
        payload = _DECISION.pack(attempt, index, free)
        data = _SIZE.pack(len(payload)) + payload
        with self._answers_lock:
            sock = self._answers.get(rank)
            if sock is None:
                self._unsent[rank] = data
                return True
        return self._write(rank, sock, data)

    def _write(self, rank: int, sock: socket.socket, data: bytes) -> bool:
        """One decision onto a non-blocking connection, whole or not at all: a rank that reads
        none (stuck, gone) fills its buffer, and its connection is shut (it asks instead)."""
        with self._answers_lock:
            try:
                written = sock.send(data)
            except OSError:
                written = -1
            if written == len(data):
                return True
            if self._answers.get(rank) is sock:
                del self._answers[rank]
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # the reading loop sees its end and closes it
        return False


_READ_SIZE = 64 * 1024  # what one read takes of a connection at most
_BATCH = 256  # records delivered (journaled with one write) at once, at most
_SIZE = struct.Struct("!i")  # multiprocessing.connection's frame: a length, then the bytes
_LONG_SIZE = struct.Struct("!Q")  # after a length of -1: a record over 2 GiB


def _frame(buffer: bytes | bytearray, start: int) -> tuple[int, int] | None:
    """Where the message that starts at ``start`` of ``buffer`` (as ``Connection.send_bytes``
    frames them) begins and ends; None while it is not whole."""
    if len(buffer) - start < _SIZE.size:
        return None
    (size,) = _SIZE.unpack_from(buffer, start)
    begin = start + _SIZE.size
    if size == -1:
        if len(buffer) - begin < _LONG_SIZE.size:
            return None
        (size,) = _LONG_SIZE.unpack_from(buffer, begin)
        begin += _LONG_SIZE.size
    end = begin + size
    return (begin, end) if len(buffer) >= end else None


def _challenge(sock: socket.socket, key: bytes) -> None:
    """Both sides prove they hold ``key`` (``multiprocessing.connection``'s HMAC exchange), on a
    copy of the socket's descriptor; a peer that does not answer within
    :data:`_CONNECT_TIMEOUT_S` fails it."""
    timeout = struct.pack("ll", int(_CONNECT_TIMEOUT_S), 0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeout)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeout)
    connection = Connection(os.dup(sock.fileno()))
    try:
        deliver_challenge(connection, key)
        answer_challenge(connection, key)
    finally:
        connection.close()


class Sender:
    """In a worker: one connection to the ledger, or ``None`` from :func:`connect`. Keeps each
    message it wrote, by the record index the caller gives, until :meth:`stored_through`."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.broken = False
        self._kept: deque[tuple[int, Any]] = deque()

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
        if not self._write(data):
            return False
        self._kept.append((index, message))
        return True

    def vote(self, attempt: int, index: int, rank: int, free: bool) -> bool:
        """Write rank ``rank``'s free-round vote (not kept: a rank whose connection breaks votes
        again by an actor call); False when it could not be written."""
        return not self.broken and self._write(pickle.dumps((VOTE, attempt, index, rank, free)))

    def _write(self, data: bytes) -> bool:
        """``data`` onto the connection; False (and broken from now on) when it cannot be."""
        try:
            self._connection.send_bytes(data)
        except OSError as exc:
            self.broken = True
            logger.info("compat's record channel broke (%s); using actor calls", exc)
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
        import time

        deadline = time.monotonic() + timeout_s
        while not self.broken:
            left = deadline - time.monotonic()
            try:
                if left <= 0 or not self._connection.poll(left):
                    return None
                decided_attempt, decided_index, free = _DECISION.unpack(self._connection.recv_bytes())
            except (OSError, EOFError, struct.error) as exc:
                self.broken = True
                logger.info("compat's answer connection broke (%s); asking by actor calls", exc)
                return None
            if (decided_attempt, decided_index) == (attempt, index):
                return bool(free)
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._connection.close()


def connect(address: Address | None) -> Sender | None:
    """Connect to the ledger at ``address``; None (use actor calls) when that fails."""
    connection = _connect(address)
    return None if connection is None else Sender(connection)


def connect_answers(address: Address | None, rank: int) -> Answers | None:
    """Rank ``rank``'s answer connection to the ledger at ``address``; None (the rank votes by
    actor calls) when that fails."""
    connection = _connect(address)
    if connection is None:
        return None
    try:
        connection.send_bytes(pickle.dumps((ANSWERS, rank)))
    except OSError:
        connection.close()
        return None
    return Answers(connection)


def _connect(address: Address | None) -> Connection | None:
    """A connection to the ledger at ``address`` that passed the key challenge both ways."""
    if address is None:
        return None
    host, port, key = address
    try:
        sock = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # records are small: send each at once
        sock.settimeout(None)
        connection = Connection(sock.detach())
        answer_challenge(connection, key)
        deliver_challenge(connection, key)
    except Exception as exc:
        logger.info("compat's record channel to %s:%s is unavailable (%s); using actor calls", host, port, exc)
        return None
    return connection


def node_ip() -> str:
    """This process's node IP as Ray knows it (loopback outside Ray)."""
    try:
        import ray

        return str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]  # untyped in Ray
    except Exception:
        return "127.0.0.1"
