"""The record channel from workers to the run ledger, as plain processes and sockets."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compat.callbacks import UserCallback
from compat.errors import InvalidSwitchValueError
from compat_core.run import channel
from compat_core.run.ledger import RunLedger
from compat_core.run.ledger.votes import FreeRoundVote
from compat_core.semantics.records import Record
from tests.compat_core import ROOT as CHECKOUT

pytestmark = pytest.mark.one_pass  # plain code, no Ray: the same in either setting (CI's first pass)

ROOT = str(CHECKOUT)  # the checkout: the subprocesses import compat_core from it


def rec(rank, index, **metrics):
    return Record(rank, index, metrics, False, False, 0.0)


class Recorder(UserCallback):
    def __init__(self):
        self.metrics = []

    def after_report(self, run_context, metrics, checkpoint):
        self.metrics.append(metrics)


def _has_ipv6() -> bool:
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", pytest.param("::1", marks=pytest.mark.skipif(not _has_ipv6(), reason="no IPv6 here"))],
)
def test_records_written_by_each_rank_reach_the_ledger_in_order(host) -> None:
    cb = Recorder()
    ledger = RunLedger(2, callbacks=[cb])
    address = ledger.open_channel(host)
    senders = [channel.connect(address), channel.connect(address)]
    for index in range(20):
        for rank, sender in enumerate(senders):
            assert sender.send((rec(rank, index, step=index, worker=rank), None))
    for rank, sender in enumerate(senders):
        sender.close()
        ledger.worker_done(rank, None, [], sent=20)  # waits until the 20 records are read
    snapshot = ledger.close()
    assert [m[0]["step"] for m in cb.metrics] == list(range(20))
    assert [[w["worker"] for w in m] for m in cb.metrics] == [[0, 1]] * 20
    assert len(snapshot.records) == 40


def test_a_wrong_key_is_refused_and_the_right_one_still_gets_in() -> None:
    ledger = RunLedger(1)
    host, port, key = ledger.open_channel("127.0.0.1")
    assert channel.connect((host, port, b"x" * len(key))) is None  # the caller falls back to actor calls
    sender = channel.connect((host, port, key))
    assert sender is not None and sender.send((rec(0, 0, a=1), None))
    sender.close()
    ledger.worker_done(0, None, [], sent=1)
    assert [r.metrics for r in ledger.close().records] == [{"a": 1}]


def test_an_address_nobody_listens_on_means_actor_calls() -> None:
    ledger = RunLedger(1)
    address = ledger.open_channel("127.0.0.1")
    ledger.close()  # stops listening
    assert channel.connect(address) is None


def test_a_record_that_cannot_be_pickled_is_left_to_the_actor_call_and_the_channel_goes_on() -> None:
    ledger = RunLedger(1)
    sender = channel.connect(ledger.open_channel("127.0.0.1"))
    assert sender.send((rec(0, 0, lock=threading.Lock()), None)) is False
    assert sender.send((rec(0, 1, a=1), None))
    sender.close()
    ledger.record(rec(0, 0, lock="sent by actor call"))
    ledger.worker_done(0, None, [], sent=2)
    records = {r.index: r.metrics for r in ledger.close().records}
    assert records == {0: {"lock": "sent by actor call"}, 1: {"a": 1}}


def test_a_record_sent_twice_is_stored_once() -> None:
    ledger = RunLedger(1)
    ledger.record(rec(0, 0, a=1))
    ledger.record(rec(0, 0, a=1))  # the channel broke after writing it; the actor call resends
    assert len(ledger.close().records) == 1


def test_records_written_just_before_the_worker_is_killed_still_arrive() -> None:
    ledger = RunLedger(1)
    address = ledger.open_channel("127.0.0.1")
    script = (
        "import os, signal, sys\n"
        "from compat_core.run import channel\n"
        "from compat_core.semantics.records import Record\n"
        f"sender = channel.connect({address!r})\n"
        "for i in range(50):\n"
        "    assert sender.send((Record(0, i, {'step': i}, False, False, 0.0), None))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    died = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert died.returncode == -9
    ledger.worker_done(0, None, [], sent=50)
    assert [r.metrics["step"] for r in ledger.close().records] == list(range(50))


def test_a_slow_callback_never_blocks_a_worker_writing_records() -> None:
    release = threading.Event()

    class Slow(UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            release.wait()

    cb = Recorder()
    ledger = RunLedger(1, callbacks=[Slow(), cb])
    sender = channel.connect(ledger.open_channel("127.0.0.1"))
    big = "x" * 10_000  # 2,000 records of 10 kB: far more than a socket buffer holds
    sent = []

    def write() -> None:
        sent.extend(sender.send((rec(0, index, pad=big), None)) for index in range(2000))

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(timeout=60)  # a writer blocked by the stuck callback would never finish
    finished = not writer.is_alive()
    release.set()
    assert finished and sent == [True] * 2000
    sender.close()
    ledger.worker_done(0, None, [], sent=2000)
    ledger.close()
    assert len(cb.metrics) == 2000


def test_a_stuck_callback_does_not_hold_up_storing_records_so_a_worker_finishes_at_once() -> None:
    """Records are stored as they are read; only the callbacks wait for a slow callback. A
    worker's end (and ``get_all_reported_checkpoints``) waits for its records to be stored,
    never for ``after_report``."""
    release = threading.Event()

    class Stuck(UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            release.wait()

    cb = Recorder()
    ledger = RunLedger(1, callbacks=[Stuck(), cb])
    sender = channel.connect(ledger.open_channel("127.0.0.1"))
    for index in range(50):
        assert sender.send((rec(0, index, step=index), None))
    sender.close()
    done = threading.Thread(target=ledger.worker_done, args=(0, None, []), kwargs={"sent": 50}, daemon=True)
    done.start()
    done.join(timeout=10)  # waiting for the stuck callback, it would take the 30 s arrival timeout
    finished = not done.is_alive()
    release.set()
    assert finished
    snapshot = ledger.close()
    assert len(snapshot.records) == 50 and [m[0]["step"] for m in cb.metrics] == list(range(50))


@pytest.mark.parametrize("value,wanted", [(None, True), ("socket", True), ("actor", False), (" Actor ", False)])
def test_the_channel_setting(monkeypatch, value, wanted) -> None:
    if value is None:
        monkeypatch.delenv(channel.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(channel.ENV_VAR, value)
    assert channel.in_use() is wanted


def test_an_unknown_channel_setting_says_what_to_set(monkeypatch) -> None:
    monkeypatch.setenv(channel.ENV_VAR, "grpc")
    with pytest.raises(InvalidSwitchValueError, match="COMPAT_RECORD_CHANNEL=actor"):
        channel.in_use()


@settings(max_examples=40, deadline=None)
@given(
    reports=st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=3),
    resent=st.sets(st.tuples(st.integers(0, 2), st.integers(0, 5)), max_size=6),
)
def test_every_record_is_stored_once_in_each_ranks_order_however_sent(reports, resent) -> None:
    """Each rank writes its reports to the channel; some are also resent as actor calls
    would (after a broken channel): the ledger holds each report once, and those only the
    channel carried in the order their rank wrote them."""
    ledger = RunLedger(len(reports))
    address = ledger.open_channel("127.0.0.1")
    senders = [channel.connect(address) for _ in reports]
    for index in range(max(reports)):
        for rank, count in enumerate(reports):
            if index < count:
                assert senders[rank].send((rec(rank, index, step=index), None))
                if (rank, index) in resent:
                    ledger.record(rec(rank, index, step=index))
    for rank, sender in enumerate(senders):
        sender.close()
        ledger.worker_done(rank, None, [], sent=reports[rank])
    records = ledger.close().records
    for rank, count in enumerate(reports):
        steps = [r.metrics["step"] for r in records if r.rank == rank]
        assert sorted(steps) == list(range(count))
        written_only = [step for step in steps if (rank, step) not in resent]
        assert written_only == sorted(written_only)


def test_a_ledger_that_cannot_listen_sends_its_workers_to_actor_calls() -> None:
    ledger = RunLedger(1)
    assert ledger.open_channel("192.0.2.1") is None  # an address of no interface here (TEST-NET-1)
    assert channel.connect(None) is None
    ledger.record(rec(0, 0, a=1))
    assert len(ledger.close().records) == 1


def listening_host(stored: str, dies_after: int = 0) -> tuple[subprocess.Popen, channel.Address]:
    """A ledger host's process that only listens: it appends each record's index to ``stored``
    and (``dies_after``) kills itself with SIGKILL after that many, as the OOM killer would."""
    script = (
        "import os, signal, threading\n"
        "from compat_core.run import channel\n"
        "count = 0\n"
        "def deliver(batch):\n"
        "    global count\n"
        "    for message, sent in batch:\n"
        f"        with open({stored!r}, 'a') as f:\n"
        "            f.write(f'{message[0].index}\\n')\n"
        "        count += 1\n"
        f"        if count == {dies_after}:\n"
        "            os.kill(os.getpid(), signal.SIGKILL)\n"
        "listener = channel.Listener('127.0.0.1', deliver)\n"
        "print(repr(listener.address), flush=True)\n"
        "threading.Event().wait()\n"
    )
    env = {**os.environ, "PYTHONPATH": ROOT}
    host = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    return host, eval(host.stdout.readline())  # noqa: S307  # the address it printed


def test_what_a_host_that_died_had_not_stored_is_still_kept_by_the_worker() -> None:
    """The ledger's host process dies (SIGKILL) while reading a worker's records: the worker
    still keeps every record it wrote after the last one the ledger said it stored, and
    forgets the ones before; with those it sends again (by actor calls, to the restarted host,
    which knows from its journal what the dead one stored), nothing is lost."""
    stored = os.path.join(ROOT, ".pytest-stored-" + str(os.getpid()))
    host, address = listening_host(stored, dies_after=7)
    try:
        sender = channel.connect(address)
        sender.stored_through(0)
        written = [index for index in range(20) if sender.send((rec(0, index, step=index), None), index)]
        assert host.wait(timeout=30) == -9
        sender.stored_through(3)  # the ledger had said: records 0-2 are stored
        kept = [record.index for record, _ in sender.unconfirmed()]
    finally:
        host.kill()
        sender.close()
    with open(stored) as f:
        on_host = [int(line) for line in f]
    os.remove(stored)
    assert on_host == list(range(7))
    refused = [index for index in range(20) if index not in written]  # sent by actor calls at once
    assert kept == [index for index in written if index >= 3]
    assert sorted(set(on_host) | set(kept) | set(refused)) == list(range(20))  # nothing lost
    assert sender.unconfirmed() == []


def test_the_ledger_says_how_far_it_has_stored_each_workers_records_whatever_their_order() -> None:
    ledger = RunLedger(2)
    for index in (0, 1, 3, 4):  # 2 comes later (an actor call overtaken by the socket)
        ledger.record(rec(0, index))
    ledger.record(rec(1, 0))
    assert (ledger.stored_through(0, 0), ledger.stored_through(0, 1)) == (2, 1)
    ledger.record(rec(0, 2))
    ledger.record(rec(0, 2))  # sent again: counts once
    assert ledger.stored_through(0, 0) == 5 and ledger.stored_through(1, 0) == 0


def test_a_finishing_worker_waits_in_the_ledger_for_its_last_records_not_on_a_timer() -> None:
    """A worker at its end asks how far its records are stored and the answer waits in the
    ledger until they are (it returns as the record that completes them arrives, not when its
    wait runs out), or until its wait runs out, with how far they are."""
    import threading

    ledger = RunLedger(1)
    ledger.record(rec(0, 0))
    answers: list[int] = []
    waiting = threading.Thread(target=lambda: answers.append(ledger.stored_through(0, 0, 2, 60.0)))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive()  # record 1 has not arrived: the answer waits
    ledger.record(rec(0, 1))
    waiting.join(10)
    assert not waiting.is_alive() and answers == [2]
    assert ledger.stored_through(0, 0, 5, 0.2) == 2  # never arrive: the wait runs out


def test_a_worker_whose_channel_broke_reconnects_to_the_restarted_hosts_socket(tmp_path) -> None:
    """The ledger's host process dies (SIGKILL: its socket goes with it) and Ray restarts it:
    the worker sends what the dead one had not confirmed, and the records of the moment, by
    actor calls, then asks the restarted host for its socket and writes the rest there. Nothing
    is lost."""
    import time

    from compat_core import switch
    from compat_core.run.engine import EngineReport
    from compat_core.run.worker import WorkerSession, WorkerSettings

    stored = tmp_path / "stored"
    first, address = listening_host(str(stored))
    restarted = RunLedger(1)

    class Ledger:
        """The worker's ledger client: its calls reach the live host (the restarted one), as Ray's do."""

        by_actor: list[int] = []

        def open_channel(self):
            return address if first.poll() is None else restarted.open_channel("127.0.0.1")

        def send_record(self, record, job=None) -> None:
            self.by_actor.append(record.index)
            restarted.record(record)

        def stored_through(self, attempt, rank, wanted, timeout_s):
            return restarted.stored_through(attempt, rank, wanted, timeout_s)

    ledger = Ledger()
    settings = WorkerSettings(switch.mode_of(switch.V2), None, ledger, {}, False, False)
    session = WorkerSession(settings, None, 0, 1, sender=channel.connect(ledger.open_channel()))

    def report(index: int) -> None:
        session.on_report(EngineReport({"step": index}, has_checkpoint=True))

    try:
        for index in range(5):
            report(index)
        deadline = time.monotonic() + 30
        while (not stored.exists() or len(stored.read_text().split()) < 5) and time.monotonic() < deadline:
            time.sleep(0.05)
        session.sender.stored_through(3)  # the host had said: records 0-2 are stored
        first.kill()  # the OOM killer
        assert first.wait(timeout=30) == -9
        on_first = [int(line) for line in stored.read_text().split()]
        for index in on_first:  # the restarted host rebuilds the run from the dead one's journal
            restarted.record(rec(0, index, step=index))
        for index in range(5, 40):
            report(index)
    finally:
        first.kill()
    assert restarted._listener is not None  # the worker asked the restarted host for its socket
    # By actor calls: what the dead host had not confirmed (3, 4), the records of the break.
    assert ledger.by_actor[:2] == [3, 4] and len(ledger.by_actor) <= 5, ledger.by_actor
    session.drain(10.0)  # returns as soon as the restarted host has them all
    assert sorted(r.index for r in restarted.close().records) == list(range(40))  # each once


class _LedgerCalls:
    """A worker's ``LedgerClient`` calling a :class:`RunLedger` in this process; counts the
    vote calls (each would be a Ray call waiting in the ledger's host)."""

    def __init__(self, ledger: RunLedger, vote_timeout_s: float) -> None:
        self.ledger, self.vote_timeout_s, self.calls = ledger, vote_timeout_s, []

    def vote_free_round(self, attempt, index, rank, free):
        self.calls.append(("vote", index, rank))
        return self.ledger.vote_free_round(attempt, index, rank, free, free) if free else False

    def settle_free_round(self, attempt, index, rank):
        self.calls.append(("settle", index, rank))
        return self.ledger.settle_free_round(attempt, index, rank)


def _sessions(ledger: RunLedger, width: int, vote_timeout_s: float = 30.0):
    from types import SimpleNamespace

    from compat_core.run.worker import WorkerSession

    client = _LedgerCalls(ledger, vote_timeout_s)
    address = ledger.open_channel("127.0.0.1")
    settings = SimpleNamespace(ledger=client)
    sessions = [
        WorkerSession(settings, None, rank, width, sender=channel.connect(address), address=address)
        for rank in range(width)
    ]
    return client, sessions


def _vote_all(sessions, frees, index=0):
    answers = {}

    def vote(session, free):
        session.next_index = index
        answers[session.rank] = session.vote_free_round(free)

    threads = [threading.Thread(target=vote, args=(s, f)) for s, f in zip(sessions, frees, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return [answers.get(s.rank) for s in sessions]


def test_a_free_round_is_decided_on_the_channel_without_a_call_per_rank() -> None:
    """Each rank writes its vote on its record connection and reads the decision on its answer
    connection: no rank waits in a call to the ledger (at 1,024 ranks a waiting call cost the
    host about 100 KB a rank)."""
    ledger = RunLedger(4)
    client, sessions = _sessions(ledger, 4)
    assert _vote_all(sessions, [True] * 4, index=0) == [True] * 4
    assert _vote_all(sessions, [True, True, False, True], index=1) == [False, False, False, False]
    assert client.calls == []  # every decision came on the channel
    assert ledger._vote.pending() == 0
    for session in sessions:
        session.close_answers()
        session.sender.close()
    ledger.close()


def test_a_rank_that_never_votes_sends_the_round_through_ray_after_the_timeout() -> None:
    """Rank 1 is slow: rank 0 hears nothing within the vote's timeout, asks, and the round is
    not free, for rank 1 too when it comes."""
    ledger = RunLedger(2)
    client, sessions = _sessions(ledger, 2, vote_timeout_s=0.3)
    assert _vote_all(sessions[:1], [True]) == [False]
    assert client.calls == [("settle", 0, 0)]
    assert _vote_all(sessions[1:], [True]) == [False]  # told on its answer connection
    assert client.calls == [("settle", 0, 0)]
    ledger.close()


def test_a_vote_whose_connection_broke_is_cast_again_by_an_actor_call() -> None:
    """The ledger's host died with the votes unanswered (here: its listener closed): each rank
    sees its answer connection end and votes again by an actor call, which Ray delivers to the
    restarted host; the round is decided there."""
    ledger = RunLedger(2)
    client, sessions = _sessions(ledger, 2)
    first = {}
    waiting = threading.Thread(target=lambda: first.update(free=sessions[0].vote_free_round(True)))
    waiting.start()
    deadline = time.monotonic() + 10
    while ledger._vote.pending() == 0 and time.monotonic() < deadline:  # rank 0's vote is counted
        time.sleep(0.01)
    ledger._vote = FreeRoundVote(2)  # the restarted host's: rank 0's channel vote died with the old one
    ledger._listener.close()  # the host's end: its connections close, nothing more is answered
    deadline = time.monotonic() + 10
    while client.calls == [] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.calls == [("vote", 0, 0)]  # rank 0 votes again, by an actor call, and waits
    assert _vote_all(sessions[1:], [True]) == [True]  # rank 1 cannot connect: an actor call too
    waiting.join(timeout=10)
    assert first == {"free": True}
    assert client.calls == [("vote", 0, 0), ("vote", 0, 1)]
