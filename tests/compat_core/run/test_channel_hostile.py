"""The record channel against peers that do not hold the run's key, and against a peer that
holds it and sends what the channel does not carry: nobody else's records wait, nothing loops."""

import logging
import os
import pickle
import socket
import struct
import threading

import numpy as np
import pytest

from compat.errors import InvalidSwitchValueError
from compat_core.run import channel
from compat_core.run.channel import client, server, wire
from compat_core.run.ledger import RunLedger
from compat_core.semantics.records import Record

pytestmark = pytest.mark.one_pass  # the same in either setting (CI's first pass); plain code but the last test

LIVENESS_S = 20  # a bound on a call that must not hang, far above what it takes


def rec(rank, index, **metrics):
    return Record(rank, index, metrics, False, False, 0.0)


def in_thread(call):
    """Run ``call`` on a thread; the result, or a failure when it has not returned in LIVENESS_S."""
    result = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(LIVENESS_S)
    assert result, f"{call} did not return within {LIVENESS_S} s"
    return result[0]


def still_open(peer: socket.socket) -> bool:
    """Whether the host has kept ``peer``'s connection open (read what it sent: not its end)."""
    peer.setblocking(False)
    try:
        while peer.recv(4096):
            pass
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


class Drip:
    """Peers that announce an answer to the host's challenge, then send it a byte at a time, each
    well within any limit on one read."""

    def __init__(self, address, count, every_s=0.2):
        self.peers = [socket.create_connection(address[:2]) for _ in range(count)]
        for peer in self.peers:
            peer.send(struct.pack("!i", 250))  # an answer of 250 bytes: 25 s at 0.1 s a byte
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drip, args=(every_s,), daemon=True)
        self._thread.start()

    def _drip(self, every_s):
        while not self._stop.wait(every_s):
            for peer in self.peers:
                try:
                    peer.send(b"\x00")
                except OSError:
                    pass

    def close(self):
        self._stop.set()
        self._thread.join()
        for peer in self.peers:
            peer.close()


def test_idle_and_slow_drip_peers_delay_no_worker(monkeypatch) -> None:
    monkeypatch.setattr(wire, "CONNECT_TIMEOUT_S", 60.0)  # the peers stay pending throughout
    ledger = RunLedger(1)
    address = ledger.open_channel("127.0.0.1")
    idle = [socket.create_connection(address[:2]) for _ in range(8)]
    drip = Drip(address, 8)
    try:
        sender = in_thread(lambda: channel.connect(address))
        assert sender is not None  # it proved the key while every hostile peer was waiting its turn
        assert sender.send((rec(0, 0, a=1), None))
        sender.close()
        ledger.worker_done(0, None, [], sent=1)
        assert [r.metrics for r in ledger.close().records] == [{"a": 1}]
        assert all(still_open(peer) for peer in idle)  # not dropped to let the worker in
    finally:
        drip.close()
        for peer in idle:
            peer.close()


def test_a_peer_that_does_not_prove_the_key_in_time_is_dropped_however_it_drips(monkeypatch) -> None:
    monkeypatch.setattr(wire, "CONNECT_TIMEOUT_S", 1.0)
    ledger = RunLedger(1)
    address = ledger.open_channel("127.0.0.1")
    drip = Drip(address, 2, every_s=0.1)  # each byte well within any per-read limit
    try:
        in_thread(lambda: _wait_until(lambda: not any(still_open(p) for p in drip.peers)))
    finally:
        drip.close()
        ledger.close()


def _wait_until(condition):
    import time

    while not condition():
        time.sleep(0.05)
    return True


def test_pending_connections_over_the_cap_drop_the_oldest(monkeypatch) -> None:
    monkeypatch.setattr(wire, "CONNECT_TIMEOUT_S", 60.0)
    monkeypatch.setattr(server, "MAX_PENDING", 4)
    ledger = RunLedger(1)
    address = ledger.open_channel("127.0.0.1")
    idle = []
    for _ in range(10):
        idle.append(socket.create_connection(address[:2]))
        idle[-1].recv(1)  # its handshake has started (the host sent its challenge)
    try:
        sender = in_thread(lambda: channel.connect(address))
        assert sender is not None
        sender.close()
        ledger.close()
        assert [still_open(peer) for peer in idle] == [False] * 7 + [True] * 3  # the worker was the 4th
    finally:
        for peer in idle:
            peer.close()


def test_a_worker_whose_host_never_answers_uses_actor_calls_after_the_timeout(monkeypatch) -> None:
    monkeypatch.setattr(wire, "CONNECT_TIMEOUT_S", 1.0)
    silent = socket.create_server(("127.0.0.1", 0))  # accepts (the kernel's backlog), never speaks
    try:
        address = ("127.0.0.1", silent.getsockname()[1], b"k" * 32)
        assert in_thread(lambda: channel.connect(address)) is None
        assert in_thread(lambda: channel.connect_answers(address, 0)) is None
    finally:
        silent.close()


@pytest.mark.parametrize(
    "header",
    [
        struct.pack("!i", -4),  # looped the reader before
        struct.pack("!i", -5),  # killed the reader thread before
        struct.pack("!i", -(2**31)),
        struct.pack("!i", -1) + struct.pack("!Q", 2**63),  # a long frame's length, unsigned but huge
        struct.pack("!i", 2_000),  # over the cap set below
    ],
    ids=["minus-4", "minus-5", "most-negative", "long-huge", "over-cap"],
)
def test_a_frame_length_the_channel_does_not_carry_closes_that_connection_once(monkeypatch, caplog, header) -> None:
    monkeypatch.setenv(channel.MAX_BYTES_VAR, "1000")
    ledger = RunLedger(2)
    address = ledger.open_channel("127.0.0.1")
    bad = client._connect(address)  # holds the key: a buggy or compromised worker
    good = channel.connect(address)
    with caplog.at_level(logging.WARNING, logger=channel.__name__):
        os.write(bad.fileno(), header + b"\x00" * 64)
        assert in_thread(lambda: bad.poll(LIVENESS_S) and _eof(bad))  # the host closed it
        for index in range(3):
            assert good.send((rec(1, index, a=index), None))
        good.close()
        ledger.worker_done(1, None, [], sent=3)
    assert [r.metrics for r in ledger.close().records] == [{"a": 0}, {"a": 1}, {"a": 2}]
    closed = [r for r in caplog.records if "closed a connection" in r.getMessage()]
    assert len(closed) == 1, [r.getMessage() for r in caplog.records]
    bad.close()


def _eof(connection) -> bool:
    try:
        connection.recv_bytes()
    except (EOFError, OSError):
        return True
    return False


def test_a_record_over_the_cap_is_left_to_an_actor_call_and_the_channel_goes_on(monkeypatch) -> None:
    monkeypatch.setenv(channel.MAX_BYTES_VAR, "100000")
    ledger = RunLedger(1)
    sender = channel.connect(ledger.open_channel("127.0.0.1"))
    assert sender.send((rec(0, 0, big=np.zeros(50_000)), None)) is False  # 400 KB: over the cap
    assert not sender.broken
    assert sender.send((rec(0, 1, a=1), None))
    sender.close()
    ledger.record(rec(0, 0, big="sent by actor call"))
    ledger.worker_done(0, None, [], sent=2)
    assert {r.index: r.metrics for r in ledger.close().records} == {0: {"big": "sent by actor call"}, 1: {"a": 1}}


def test_a_large_record_arrives_whole_among_small_ones() -> None:
    ledger = RunLedger(1)
    sender = channel.connect(ledger.open_channel("127.0.0.1"))
    big = np.arange(4 * 1024 * 1024, dtype=np.float64)  # 32 MB: received into a buffer of its own
    assert sender.send((rec(0, 0, a=0), None))
    assert sender.send((rec(0, 1, big=big), None))
    assert sender.send((rec(0, 2, a=2), None))
    sender.close()
    ledger.worker_done(0, None, [], sent=3)
    records = ledger.close().records
    assert [r.index for r in records] == [0, 1, 2]
    np.testing.assert_array_equal(records[1].metrics["big"], big)
    assert records[2].metrics == {"a": 2}


@pytest.mark.parametrize("value", ["0", "-1", "lots", "1.5"])
def test_an_invalid_record_size_cap_says_what_to_set(monkeypatch, value) -> None:
    monkeypatch.setenv(channel.MAX_BYTES_VAR, value)
    with pytest.raises(InvalidSwitchValueError, match="positive whole number of bytes"):
        channel.max_bytes()


class Trickle:
    """A socket's reading side that has ``step`` bytes of ``wire`` ready at each read."""

    def __init__(self, wire: bytes, step: int) -> None:
        self.wire, self.step, self.at = wire, step, 0

    def recv(self, size: int) -> bytes:
        if self.at >= len(self.wire):
            raise BlockingIOError
        data = self.wire[self.at : self.at + min(size, self.step)]
        self.at += len(data)
        return data

    def recv_into(self, view: memoryview, size: int) -> int:
        data = self.recv(size)
        view[: len(data)] = data
        return len(data)


@pytest.mark.parametrize("step", [13, 4096, 65_537, 10**7])
def test_frames_split_anywhere_are_read_as_sent(step) -> None:
    messages = [pickle.dumps(("m", i, b"x" * size)) for i, size in enumerate([0, 10, 300_000, 5, 1_000_000, 3])]
    sent = b"".join(struct.pack("!i", len(m)) + m for m in messages)
    incoming, got, feed = wire.Incoming(10**9), [], Trickle(sent, step)
    while True:
        try:
            assert incoming.receive(feed)
        except BlockingIOError:
            break
        got += incoming.messages()
    assert got == messages


@pytest.mark.ray
@pytest.mark.extended_rerun  # the channel is the same on either engine: its first pass runs both backends
def test_a_live_run_with_hostile_peers_on_its_ledgers_port_keeps_every_report_on_the_channel(
    backend, tmp_path, monkeypatch
) -> None:
    """A real fit that fails once, with 8 idle and 8 slow-drip peers without the key on the run
    ledger's port from its first worker's start (what benchmarks/bench_channel.py times: within
    1 s of a clean fit, docs/performance.md): the restarted worker connects and proves the key
    through the peers, its records go on the channel (not the actor-call fallback), and every
    report is kept once, under both backends."""
    from benchmarks.bench_channel import one_fit

    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1" if backend == "v2" else "0")
    # one_fit asserts: the 16 peers reached the host, the restarted worker's own connection and a
    # fresh one passed the key among them (a connection that cannot within the timeout is None),
    # and the run's worker reports are every report once.
    one_fit(backend, 4, True, str(tmp_path))
