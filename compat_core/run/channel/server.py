"""The ledger's side of the channel: :class:`Listener` accepts the run's workers, has each
prove the run's key (:class:`Handshakes`), reads every connection on one thread and hands the
records on in batches; it writes the free-round decisions back on the ranks' answer
connections."""

from __future__ import annotations

import contextlib
import pickle
import secrets
import select
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from compat_core.run.channel import wire

# Connections accepted that have not proved the key yet, at most; then the oldest is dropped once
# it has been pending this long (a run's own workers prove it within milliseconds of connecting).
MAX_PENDING = 128
STALE_PENDING_S = 0.25
BATCH = 256  # records delivered (journaled with one write) at once, at most


class Listener:
    """In the ledger's process: accepts workers and hands their records to ``deliver``, each
    with the bytes it came as, in the order each worker wrote them. One thread reads every
    worker's connection (a selector loop: whatever the run's width, the listener holds two
    threads, this one and one that accepts, besides one for each connection still proving the
    key, at most :data:`MAX_PENDING`, for milliseconds each), reading whatever
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
        self._max_bytes = wire.max_bytes()
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
    def address(self) -> wire.Address:
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
        (:class:`Handshakes`), so a peer that never answers, or answers a byte at a time, delays
        nobody else's; a connection that proves it goes to the reading loop."""
        handshakes = Handshakes(self._key, self._joined)
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
        incoming: dict[socket.socket, wire.Incoming] = {}  # what each connection has sent, not yet whole
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
                            incoming[joined] = wire.Incoming(self._max_bytes)
                            self._selector.register(joined, selectors.EVENT_READ, None)
                        continue
                    assert isinstance(sock, socket.socket)
                    if not self._read(sock, incoming[sock], batch):
                        self._selector.unregister(sock)
                        del incoming[sock]
                        self._forget(sock)
                        sock.close()  # the worker finished (or died): everything it wrote was read
                    if len(batch) >= BATCH and not self._closed:
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

    def _read(self, sock: socket.socket, incoming: wire.Incoming, batch: list[tuple[Any, bytes]]) -> bool:
        """Read what ``sock`` has, adding each record (and vote) it completes to ``batch``; False
        once the worker closed its end, the connection broke, or it announced a message the
        channel does not carry (a negative length, one over :func:`wire.max_bytes`)."""
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
                    wire.logger.exception("compat's record channel could not read a record")
                    continue
                if wire.tagged(message, wire.ANSWERS):
                    self._answering(message[1], sock)
                else:
                    batch.append((message, sent))
        except wire.BadFrame as exc:
            wire.logger.warning("compat's record channel closed a connection: %s", exc)
            return False
        return True

    def _deliver_batch(self, batch: list[tuple[Any, bytes]]) -> None:
        """The batch's records to ``deliver``, then its votes to ``vote``."""
        records = [item for item in batch if not wire.tagged(item[0], wire.VOTE)]
        try:
            if records:
                self._deliver(records)
        except Exception:
            wire.logger.exception("compat's record channel could not store %d records", len(records))
        if len(records) == len(batch) or self._vote is None:
            return
        for message, _ in batch:
            if wire.tagged(message, wire.VOTE):
                try:
                    self._vote(*message[1:])
                except Exception:  # the rank asks by an actor call when no decision comes
                    wire.logger.exception("compat's record channel could not count a vote")

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
        payload = wire.DECISION.pack(attempt, index, free)
        data = wire.SIZE.pack(len(payload)) + payload
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


class Handshakes:
    """The host's side of new connections: each proves it holds the key on a thread of its own,
    within :data:`wire.CONNECT_TIMEOUT_S` for the whole exchange (however slowly its peer sends).
    At most :data:`MAX_PENDING` at once: then the oldest is dropped as soon as it has been
    pending :data:`STALE_PENDING_S` (a run's own workers prove the key within milliseconds; a
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
            while len(self._pending) >= MAX_PENDING:
                oldest, since = next(iter(self._pending.items()))
                age = time.monotonic() - since
                if age >= STALE_PENDING_S:
                    wire.shut(oldest)  # its thread sees the end and frees the slot
                    del self._pending[oldest]
                    return
                self._slot.wait(STALE_PENDING_S - age)

    def start(self, sock: socket.socket) -> None:
        with self._slot:
            self._pending[sock] = time.monotonic()
        threading.Thread(target=self._run, args=(sock,), name="compat-channel-key", daemon=True).start()

    def _run(self, sock: socket.socket) -> None:
        try:
            wire.challenge(sock, self._key, server=True)
        except Exception as exc:  # a wrong key, a client that never answers, not our protocol
            with self._slot:
                self._pending.pop(sock, None)
                self._slot.notify()
                self._refused += 1
                first = self._refused == 1
            (wire.logger.warning if first else wire.logger.debug)(
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
