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
"""

from __future__ import annotations

import logging
import os
import pickle
import secrets
import socket
import threading
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

ENV_VAR = "COMPAT_RECORD_CHANNEL"
_CONNECT_TIMEOUT_S = 5.0

Address = tuple[str, int, bytes]  # host, port, key

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
    """In the ledger's process: accepts workers and hands each record to ``deliver``, in
    the order each worker wrote them, on the thread that reads that worker's connection: one
    thread wakes per record (a reading thread handing records to a storing one cost 20 us of
    the ledger's CPU a record instead of 13-18 us, ``bench_runtime --records``). ``deliver`` is
    called from several threads at once and must return quickly: the ledger stores the record
    and leaves the callbacks to its delivery thread."""

    def __init__(self, host: str, deliver: Callable[[Any], None]) -> None:
        self._key = secrets.token_bytes(32)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._server = socket.create_server((host, 0), family=family)
        self._host = host
        self._deliver = deliver
        self._closed = False
        self._busy = 0  # records being delivered now
        self._idle = threading.Condition()
        threading.Thread(target=self._accept_loop, name="compat-channel-accept", daemon=True).start()

    @property
    def address(self) -> Address:
        return (self._host, self._server.getsockname()[1], self._key)

    def close(self) -> None:
        """Stop accepting and delivering; returns once the records being delivered are."""
        with self._idle:
            self._closed = True
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone does not)
        except OSError:
            pass
        self._server.close()
        with self._idle:
            self._idle.wait_for(lambda: self._busy == 0)

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                sock, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._read_loop, args=(sock,), name="compat-channel-read", daemon=True).start()

    def _read_loop(self, sock: socket.socket) -> None:
        connection = Connection(sock.detach())
        try:
            deliver_challenge(connection, self._key)
            answer_challenge(connection, self._key)
            while self._process(connection.recv_bytes()):
                pass
        except (EOFError, OSError):
            pass  # the worker finished (or died): everything it wrote was read
        except Exception as exc:  # a wrong key, or not our protocol at all
            logger.warning("compat's record channel refused a connection: %s", exc)
        finally:
            connection.close()

    def _process(self, data: bytes) -> bool:
        """Deliver one record; False once the listener is closed (the run is over)."""
        with self._idle:
            if self._closed:
                return False
            self._busy += 1
        try:
            self._deliver(pickle.loads(data))
        except Exception:  # one bad record must not stop the others
            logger.exception("compat's record channel could not store a record")
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()
        return True


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
        try:
            self._connection.send_bytes(data)
        except OSError as exc:
            self.broken = True
            logger.info("compat's record channel broke (%s); using actor calls", exc)
            return False
        self._kept.append((index, message))
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


def connect(address: Address | None) -> Sender | None:
    """Connect to the ledger at ``address``; None (use actor calls) when that fails."""
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
    return Sender(connection)


def node_ip() -> str:
    """This process's node IP as Ray knows it (loopback outside Ray)."""
    try:
        import ray

        return str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]  # untyped in Ray
    except Exception:
        return "127.0.0.1"
