"""compat's run ledger host at width: its threads do not grow with the number of workers.

The host is driven in this process as Ray drives it (an asyncio actor: each call a coroutine on
one event loop), by simulated ranks that each hold a record and an answer connection to the
run's channel and wait for the free-round decision at once. Plain code, no Ray;
``benchmarks/bench_width.py`` measures the same on real Ray up to 4,096 ranks (docs/performance.md,
"Width")."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time

import pytest

from compat_core.run import channel
from compat_core.run.channel import wire
from compat_core.run.ledger.host import CALL_THREADS, WAIT_THREADS, LedgerHost
from compat_core.semantics.records import Record

pytestmark = pytest.mark.one_pass  # no Ray, no mode


async def _decision(sock: socket.socket) -> tuple[int, int, bool]:
    """The next decision the ledger wrote on an answer connection."""
    size = 4 + wire.DECISION.size
    data = b""
    while len(data) < size:
        chunk = await asyncio.get_running_loop().sock_recv(sock, size - len(data))
        assert chunk, "the answer connection closed"
        data += chunk
    return wire.DECISION.unpack(data[4:])


async def _rounds(host: LedgerHost, run_id: str, width: int, rounds: int, pushed: bool) -> int:
    """``width`` ranks, each with its own record and answer connections, run ``rounds`` free
    rounds (record, then vote, then the decision: on the answer connection when ``pushed``,
    else from an actor call, a worker's fallback); the most threads this process had while
    every rank waited for a decision."""
    loop = asyncio.get_running_loop()
    address = await host.call(run_id, "open_channel", "127.0.0.1")
    senders = [await loop.run_in_executor(None, channel.connect, address) for _ in range(width)]
    answers = []
    for rank in range(width):
        connection = await loop.run_in_executor(None, channel.connect_answers, address, rank)
        sock = socket.socket(fileno=os.dup(connection._connection.fileno()))
        connection.close()
        sock.setblocking(False)
        answers.append(sock)
    assert all(senders)
    most = threading.active_count()
    for index in range(rounds):

        async def rank_round(rank: int, index: int = index) -> bool:
            senders[rank].send((Record(rank, index, {"step": index}, False, False, time.time()), None), index)
            if not pushed:
                return bool(await host.call(run_id, "vote_free_round", 0, index, rank, True, True))
            assert senders[rank].vote(0, index, rank, True)
            attempt, decided_index, free = await _decision(answers[rank])
            assert (attempt, decided_index) == (0, index)
            return free

        voting = [asyncio.ensure_future(rank_round(rank)) for rank in range(width)]
        await asyncio.sleep(0)
        most = max(most, threading.active_count())
        assert await asyncio.gather(*voting) == [True] * width  # every rank free: the round is free
    stored = await asyncio.gather(
        *(host.call(run_id, "stored_through", 0, rank, rounds, 30.0) for rank in range(width))
    )
    assert stored == [rounds] * width  # every record of every rank, through the one reading thread
    most = max(most, threading.active_count())
    for sender, sock in zip(senders, answers, strict=True):
        sender.close()
        sock.close()
    return most


def _threads_at(width: int, tmp_path, pushed: bool) -> int:
    host = LedgerHost()
    run_id = f"run-{width}"
    journal = str(tmp_path / f"{run_id}.journal")
    asyncio.run(host.open_run(run_id, width, {"journal_path": journal, "vote_timeout_s": 60.0}))
    try:
        return asyncio.run(_rounds(host, run_id, width, rounds=3, pushed=pushed))
    finally:
        asyncio.run(host.close_run(run_id))


@pytest.mark.parametrize("pushed", [True, False], ids=["decisions-pushed", "actor-call-votes"])
def test_the_hosts_threads_do_not_grow_with_the_runs_width(tmp_path, pushed) -> None:
    """Runs of 64 and of 640 ranks, every rank waiting in the vote at once and writing to its own
    socket: the host holds no more threads for the wide run than its two pools, the channel's two
    and the run's delivery (a rank used to hold a thread in the vote, and each socket one more:
    over 1,200 threads at 640 ranks)."""
    before = threading.active_count()  # this process's own (Ray's too, when a test started it)
    narrow = _threads_at(64, tmp_path, pushed) - before
    wide = _threads_at(640, tmp_path, pushed) - before
    fixed = CALL_THREADS + WAIT_THREADS + 4 + 6  # + channel (2), delivery, listener; asyncio's executor
    assert narrow <= fixed and wide <= fixed, (narrow, wide, fixed)
