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

from compat_core.run.channel.client import Answers, Sender, connect, connect_answers, in_use
from compat_core.run.channel.server import Listener
from compat_core.run.channel.wire import ENV_VAR, MAX_BYTES_VAR, Address, logger, max_bytes

__all__ = [
    "ENV_VAR",
    "MAX_BYTES_VAR",
    "Address",
    "Answers",
    "Listener",
    "Sender",
    "connect",
    "connect_answers",
    "in_use",
    "logger",
    "max_bytes",
]
