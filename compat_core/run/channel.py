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
import select
import selectors
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

from compat_core import settings

ENV_VAR = settings.RECORD_CHANNEL.name
MAX_BYTES_VAR = settings.RECORD_MAX_BYTES.name
# A connection's whole key exchange, on either side: a worker that has not connected and proved
# the key within it uses actor calls; the host drops a peer that has not proved it within it.
_CONNECT_TIMEOUT_S = 5.0
# Connections accepted that have not proved the key yet, at most; then the oldest is dropped once
# it has been pending this long (a run's own workers prove it within milliseconds of connecting).
_MAX_PENDING = 128
_STALE_PENDING_S = 0.25

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


def max_bytes() -> int:
    """The largest message the channel carries (``COMPAT_RECORD_MAX_BYTES``, default 512 MiB): a
    worker sends a larger record by an actor call, and the host closes a connection that announces
    one (or a negative length) instead of reading it."""
    return settings.RECORD_MAX_BYTES.get()


def wanted() -> bool:
    """Whether workers should use the channel (``COMPAT_RECORD_CHANNEL``, default ``socket``)."""
    return settings.RECORD_CHANNEL.get() == "socket"


class Listener:
    """In the ledger's process: accepts workers and hands their records to ``deliver``, each
    with the bytes it came as, in the order each worker wrote them. One thread reads every
    worker's connection (a selector loop: whatever the run's width, the listener holds two
    threads, this one and one that accepts, besides one for each connection still proving the
    key, at most :data:`_MAX_PENDING`, for milliseconds each), reading whatever
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
        self._max_bytes = max_bytes()
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
        """Accepts connections and has each prove it holds the run's key on a thread of its own
        (:class:`_Handshakes`), so a peer that never answers, or answers a byte at a time, delays
        nobody else's; a connection that proves it goes to the reading loop."""
        handshakes = _Handshakes(self._key, self._joined)
        waiting = select.poll()  # no descriptor-number limit, unlike select()
        waiting.register(self._server, select.POLLIN)
        while not self._closed:
            try:
                waiting.poll()  # a connection waits (or the listener closed)
            except OSError:
                return
            if self._closed:  # woken by close(): no connection waits, none pending is dropped
                return
            handshakes.wait_for_slot()  # only now: a stale peer is dropped for one that waits
            try:
                sock, _ = self._server.accept()
            except OSError:
                return  # closed
            handshakes.start(sock)

    def _joined(self, sock: socket.socket) -> None:
        """``sock`` proved the key: the reading loop takes it."""
        sock.setblocking(False)
        self._joining.append(sock)
        self._wake()

    def _read_loop(self) -> None:
        incoming: dict[socket.socket, _Incoming] = {}  # what each connection has sent, not yet whole
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
                            incoming[joined] = _Incoming(self._max_bytes)
                            self._selector.register(joined, selectors.EVENT_READ, None)
                        continue
                    assert isinstance(sock, socket.socket)
                    if not self._read(sock, incoming[sock], batch):
                        self._selector.unregister(sock)
                        del incoming[sock]
                        self._forget(sock)
                        sock.close()  # the worker finished (or died): everything it wrote was read
                    if len(batch) >= _BATCH and not self._closed:
                        self._deliver_batch(batch)  # memory: a batch, not every ready connection's reads
                        batch = []
                if batch and not self._closed:
                    self._deliver_batch(batch)
        finally:
            for sock in incoming:
                sock.close()
            self._selector.close()
            self._wake_reader.close()
            self._wake_writer.close()

    def _read(self, sock: socket.socket, incoming: _Incoming, batch: list[tuple[Any, bytes]]) -> bool:
        """Read what ``sock`` has, adding each record (and vote) it completes to ``batch``; False
        once the worker closed its end, the connection broke, or it announced a message the
        channel does not carry (a negative length, one over :func:`max_bytes`)."""
        try:
            if not incoming.receive(sock):
                return False
        except BlockingIOError:
            return True
        except OSError:
            return False
        try:
            for sent in incoming.messages():
                try:
                    message = pickle.loads(sent)
                except Exception:  # one bad record must not stop the others
                    logger.exception("compat's record channel could not read a record")
                    continue
                if _tagged(message, ANSWERS):
                    self._answering(message[1], sock)
                else:
                    batch.append((message, sent))
        except _BadFrame as exc:
            logger.warning("compat's record channel closed a connection: %s", exc)
            return False
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


_READ_SIZE = 256 * 1024  # what one read takes of a connection at most
_BATCH = 256  # records delivered (journaled with one write) at once, at most
_SIZE = struct.Struct("!i")  # multiprocessing.connection's frame: a length, then the bytes
_LONG_SIZE = struct.Struct("!Q")  # after a length of -1: a record over 2 GiB


class _BadFrame(Exception):
    """A connection announced a message the channel does not carry."""


class _Incoming:
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
            count = sock.recv_into(view, min(len(view), 4 * _READ_SIZE))
            self._filled += count
            return count > 0
        data = sock.recv(_READ_SIZE)
        self._buffer += data
        return bool(data)

    def messages(self) -> list[bytes]:
        """The messages now whole, oldest first (raises :class:`_BadFrame` on a length the
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
            header = _header(buffer, start, self._limit)
            if header is None:
                break
            begin, size = header
            end = begin + size
            if end <= len(buffer):
                done.append(bytes(buffer[begin:end]))
                start = end
                continue
            if size > _READ_SIZE:  # the rest straight into a buffer of its own
                self._body = bytearray(size)
                have = len(buffer) - begin
                self._body[:have] = buffer[begin:]
                self._filled = have
                start = len(buffer)
            break
        del buffer[:start]
        return done


def _header(buffer: bytearray, start: int, limit: int) -> tuple[int, int] | None:
    """Where the message that starts at ``start`` of ``buffer`` (as ``Connection.send_bytes``
    frames them) begins and how long it is; None while its header is not whole."""
    if len(buffer) - start < _SIZE.size:
        return None
    (size,) = _SIZE.unpack_from(buffer, start)
    begin = start + _SIZE.size
    if size == -1:
        if len(buffer) - begin < _LONG_SIZE.size:
            return None
        (size,) = _LONG_SIZE.unpack_from(buffer, begin)
        begin += _LONG_SIZE.size
    if size < 0:
        raise _BadFrame(f"it announced a message of {size} bytes")
    if size > limit:
        raise _BadFrame(f"it announced a message of {size:,} bytes, over {MAX_BYTES_VAR}={limit:,}")
    return begin, size


class _Handshakes:
    """The host's side of new connections: each proves it holds the key on a thread of its own,
    within :data:`_CONNECT_TIMEOUT_S` for the whole exchange (however slowly its peer sends).
    At most :data:`_MAX_PENDING` at once: then the oldest is dropped as soon as it has been
    pending :data:`_STALE_PENDING_S` (a run's own workers prove the key within milliseconds; a
    burst of them waits in the kernel's backlog meanwhile, not refused). A refusal is logged as
    a warning the first time, then at debug level (a peer cannot fill the log)."""

    def __init__(self, key: bytes, joined: Callable[[socket.socket], None]) -> None:
        self._key = key
        self._joined = joined
        self._pending: dict[socket.socket, float] = {}  # -> when it was accepted; oldest first
        self._slot = threading.Condition()
        self._refused = 0

    def wait_for_slot(self) -> None:
        """Returns once a connection may be accepted: fewer than the cap pending, the oldest
        dropped once it is stale."""
        with self._slot:
            while len(self._pending) >= _MAX_PENDING:
                oldest, since = next(iter(self._pending.items()))
                age = time.monotonic() - since
                if age >= _STALE_PENDING_S:
                    _shut(oldest)  # its thread sees the end and frees the slot
                    del self._pending[oldest]
                    return
                self._slot.wait(_STALE_PENDING_S - age)

    def start(self, sock: socket.socket) -> None:
        with self._slot:
            self._pending[sock] = time.monotonic()
        threading.Thread(target=self._run, args=(sock,), name="compat-channel-key", daemon=True).start()

    def _run(self, sock: socket.socket) -> None:
        try:
            _challenge(sock, self._key, server=True)
        except Exception as exc:  # a wrong key, a client that never answers, not our protocol
            with self._slot:
                self._pending.pop(sock, None)
                self._slot.notify()
                self._refused += 1
                first = self._refused == 1
            (logger.warning if first else logger.debug)(
                "compat's record channel refused a connection: %s%s",
                str(exc) or type(exc).__name__,
                " (further refusals are logged at debug level)" if first else "",
            )
            sock.close()
            return
        with self._slot:
            dropped = self._pending.pop(sock, None) is None
            self._slot.notify()
        if dropped:
            sock.close()
        else:
            self._joined(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _challenge(sock: socket.socket, key: bytes, *, server: bool, within: float | None = None) -> None:
    """Both sides prove they hold ``key`` (``multiprocessing.connection``'s HMAC exchange; the
    host challenges first), on a copy of the socket's descriptor, within ``within`` seconds
    (default :data:`_CONNECT_TIMEOUT_S`) for the whole exchange (the socket is shut down when
    they are up)."""
    if within is None:
        within = _CONNECT_TIMEOUT_S
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        _shut(sock)

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


class Sender:
    """In a worker: one connection to the ledger, or ``None`` from :func:`connect`. Keeps each
    message it wrote, by the record index the caller gives, until :meth:`stored_through`."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self.broken = False
        self._kept: deque[tuple[int, Any]] = deque()
        self._limit = max_bytes()

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
    started = time.monotonic()
    try:
        sock = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S)
    except Exception as exc:
        logger.info("compat's record channel to %s:%s is unavailable (%s); using actor calls", host, port, exc)
        return None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # records are small: send each at once
        sock.settimeout(None)
        left = _CONNECT_TIMEOUT_S - (time.monotonic() - started)  # connect and key: one timeout
        _challenge(sock, key, server=False, within=max(left, 0.001))
        connection = Connection(sock.detach())
    except Exception as exc:
        sock.close()
        logger.info("compat's record channel to %s:%s is unavailable (%s); using actor calls", host, port, exc)
        return None
    return connection
