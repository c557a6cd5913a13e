"""Width: compat's run ledger host with 64 to 4,096 simulated ranks, on real Ray.

    python -m benchmarks.bench_width [--widths 64 256 1024 4096] [--rounds 20] [--records 200]
    python -m benchmarks.bench_width --real 16 32 [--rounds 40] [--repeat 2]

The host is compat's own ``LedgerHost`` (an asyncio Ray actor, its record channel, its journal),
started as a fit starts it, with one run of ``world_size`` = width. The ranks are simulated by
lightweight clients: ``--clients`` async Ray actors (2 by default, one per core), each playing
``width / clients`` ranks as coroutines that speak the workers' protocol: each rank has its own
record connection to the channel and its own answer connection (each with its key challenge),
and calls the host through Ray where a worker's ``LedgerClient`` does. Measured per width:

- **free round**: every rank writes its record of the round and its vote "free" to its record
  connection, then reads the decision on its answer connection (V2's free round,
  compatibility.md §13; compat_core.run.channel). *Vote latency* is taken in the host (a
  subclass that only timestamps the run's vote and push hooks): from the round's last vote read
  to its last decision written, median over the rounds; *round* is the same seen by the clients
  (from the last vote written to the last decision read: the sockets both ways and the clients'
  own loops, all on the same 2 cores);
- **records/s**: every rank writes ``--records`` records to its socket as fast as it can; from
  the first write to the host having stored every one (journaled, counted);
- the host's **threads** (the most seen while the phases ran, ``/proc/<pid>/status``), its **CPU**
  per round, and its **memory per rank**: RSS growth from before the run opened to after the
  free rounds (the ranks in step, as training keeps them), and after the records phase (ranks
  up to ``--records`` rounds apart: the host holds every incomplete round);
- **Ray's floor** at the same width: a bare asyncio actor given a vote *call* per rank by the same
  clients (what the vote cost when each waiting rank held an actor call, before the decisions
  were pushed): its round as the clients see it and its RSS growth per rank.

``--real W ...`` runs real fits instead: ``DataParallelTrainer`` with W light workers (each
reports ``--rounds`` free-floating rounds and trains nothing; one logical CPU each, on a cluster
of 2 cores that says it has 64), raw ``ray.train`` and compat in turns, in V1 semantics on V1's
engine, V1 semantics on V2's engine (against raw V1: raw Ray has no such mode) and V2 semantics
(raw V2 at compat's 0.05 s controller poll). Per round: rank 0's time from its first report to
its last, divided by the rounds; median over ``--repeat`` turns; the ratio compat/raw. Each
compat fit is checked to have kept every report of every worker.

All numbers come from one run of this command on one machine; docs/performance.md has them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import threading
import time
from typing import Any

from compat_core.run.ledger.host import LedgerHost


class TimedHost(LedgerHost):
    """compat's host, timestamping the votes its runs read from the channel and the decisions
    they push (by wrapping the run's two hooks when the channel opens): nothing else differs."""

    def __init__(self, index: str | None = None) -> None:
        super().__init__(index)
        self._arrived: dict[int, list[float]] = {}
        self._pushed: dict[int, list[float]] = {}

    async def call(self, run_id: str, method: str, *args: Any) -> Any:
        if method == "open_channel":
            ledger = self._run(run_id)
            if "_vote_sent" not in vars(ledger):
                counted = ledger._vote_sent

                def vote_sent(attempt: int, index: int, rank: int, free: bool) -> None:
                    self._arrived.setdefault(index, []).append(time.monotonic())
                    counted(attempt, index, rank, free)

                ledger._vote_sent = vote_sent  # type: ignore[method-assign]
            address = await super().call(run_id, method, *args)
            push = ledger._vote.push
            if push is not None and not hasattr(push, "timed"):

                def timed_push(rank: int, key: tuple[int, int], free: bool) -> bool:
                    written = push(rank, key, free)
                    self._pushed.setdefault(key[1], []).append(time.monotonic())
                    return written

                timed_push.timed = True  # type: ignore[attr-defined]
                ledger._vote.push = timed_push
            return address
        return await super().call(run_id, method, *args)

    def vote_times(self) -> list[float]:
        """Per round: from its last vote read to its last decision written."""
        times = [max(self._pushed[i]) - max(self._arrived[i]) for i in sorted(self._pushed) if i in self._arrived]
        self._arrived, self._pushed = {}, {}
        return times


class Floor:
    """Ray's own cost of the same calls: a bare asyncio actor whose ``vote`` waits until every
    rank of the round called it (nothing journaled, no channel, no ledger)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.rounds: dict[int, tuple[int, asyncio.Event]] = {}

    async def vote(self, index: int) -> bool:
        count, decided = self.rounds.get(index) or (0, asyncio.Event())
        self.rounds[index] = (count + 1, decided)
        if count + 1 == self.width:
            del self.rounds[index]
            decided.set()
        else:
            await decided.wait()
        return True

    def pid(self) -> int:
        return os.getpid()


class FloorRanks:
    """Ranks of :class:`Floor`'s calls: coroutines on one event loop, as :class:`Ranks`'."""

    def __init__(self, floor: Any, count: int) -> None:
        self.floor, self.count = floor, count

    async def rounds(self, first_index: int, rounds: int) -> list[tuple[float, float]]:
        timings = []
        for index in range(first_index, first_index + rounds):
            sent: list[float] = []
            answered: list[float] = []

            async def one(index: int = index, sent: list = sent, answered: list = answered) -> None:
                call = self.floor.vote.remote(index)
                sent.append(time.monotonic())
                await call
                answered.append(time.monotonic())

            await asyncio.gather(*(one() for _ in range(self.count)))
            timings.append((max(sent), max(answered)))
        return timings


def floor(width: int, rounds: int, clients: int) -> tuple[float, float]:
    """Ray's floor at ``width``: (median round seen by the clients, RSS growth per rank)."""
    import ray

    actor = ray.remote(num_cpus=0)(Floor).options(max_concurrency=2 * width + 16).remote(width)
    pid = ray.get(actor.pid.remote())
    before = rss_of(pid)
    share = -(-width // clients)
    client_class = ray.remote(num_cpus=0, max_concurrency=4)(FloorRanks)
    players = [client_class.remote(actor, min(share, width - first)) for first in range(0, width, share)]
    ray.get([p.rounds.remote(0, 2) for p in players])
    seen = ray.get([p.rounds.remote(2, rounds) for p in players])
    per_rank = (rss_of(pid) - before) / width
    for handle in (*players, actor):
        ray.kill(handle)
    return statistics.median(max(s[i][1] for s in seen) - max(s[i][0] for s in seen) for i in range(rounds)), per_rank


class Ranks:
    """Simulated ranks ``first`` .. ``first + count - 1`` of a run: coroutines on one event loop,
    each with its own record connection to the run's channel and its own answer connection (the
    workers' protocol, compat_core.run.channel), read by the loop."""

    def __init__(self, ledger: Any, first: int, count: int) -> None:
        self.ledger = ledger
        self.ranks = range(first, first + count)
        self.senders: dict[int, Any] = {}
        self.answers: dict[int, Any] = {}  # rank -> its answer connection, as a non-blocking socket

    async def connect(self) -> int:
        import socket

        from compat_core.run import channel

        address = await self.ledger.actor.call.remote(self.ledger.run_id, "open_channel")
        loop = asyncio.get_running_loop()
        for rank in self.ranks:
            self.senders[rank] = await loop.run_in_executor(None, channel.connect, address)
            answers = await loop.run_in_executor(None, channel.connect_answers, address, rank)
            sock = socket.socket(fileno=os.dup(answers._connection.fileno()))
            answers.close()
            sock.setblocking(False)
            self.answers[rank] = sock
        return sum(sender is not None for sender in self.senders.values())

    async def _decision(self, rank: int) -> tuple[int, int, bool]:
        """The next decision on ``rank``'s answer connection (a length, then attempt, index, free)."""
        from compat_core.run.channel import wire

        size = 4 + wire.DECISION.size
        data = b""
        loop = asyncio.get_running_loop()
        while len(data) < size:
            chunk = await loop.sock_recv(self.answers[rank], size - len(data))
            assert chunk, "the answer connection closed"
            data += chunk
        return wire.DECISION.unpack(data[4:])

    async def free_rounds(self, first_index: int, rounds: int) -> list[tuple[float, float]]:
        """Each round: every rank's record to its socket, then its vote; (last vote sent, last
        answer received) per round."""
        from compat_core.semantics.records import Record

        timings = []
        for index in range(first_index, first_index + rounds):
            sent: list[float] = []
            answered: list[float] = []

            async def rank_round(rank: int, index: int = index, sent: list = sent, answered: list = answered) -> None:
                record = Record(rank, index, {"loss": 1.0 / (index + 1), "step": index}, False, False, time.time())
                self.senders[rank].send((record, None), index)
                assert self.senders[rank].vote(0, index, rank, True)
                sent.append(time.monotonic())
                assert await self._decision(rank) == (0, index, True)
                answered.append(time.monotonic())

            await asyncio.gather(*(rank_round(rank) for rank in self.ranks))
            timings.append((max(sent), max(answered)))
        return timings

    async def flood(self, first_index: int, records: int) -> float:
        """``records`` records of every rank, written as fast as the sockets take them (pickled
        beforehand, as the workers would have, so that the clients' own CPU, on the host's
        cores, goes to the writes); when the first was written."""
        from ray import cloudpickle

        from compat_core.semantics.records import Record

        frames = [
            [
                cloudpickle.dumps((Record(rank, index, {"loss": 0.5, "step": index}, False, False, time.time()), None))
                for rank in self.ranks
            ]
            for index in range(first_index, first_index + records)
        ]
        started = time.monotonic()
        for index, pickled in enumerate(frames):
            for rank, data in zip(self.ranks, pickled, strict=True):
                self.senders[rank]._connection.send_bytes(data)  # what Sender.send writes
            if index % 16 == 0:
                await asyncio.sleep(0)
        return started

    async def forget(self) -> None:
        for sender in self.senders.values():
            sender.stored_through(1 << 62)


def _proc(pid: int, name: str) -> str:
    with open(f"/proc/{pid}/{name}") as f:
        return f.read()


def threads_of(pid: int) -> int:
    return int(next(line for line in _proc(pid, "status").splitlines() if line.startswith("Threads:")).split()[1])


def rss_of(pid: int) -> int:
    return int(next(line for line in _proc(pid, "status").splitlines() if line.startswith("VmRSS:")).split()[1]) * 1024


def cpu_of(pid: int) -> float:
    fields = _proc(pid, "stat").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ThreadWatch:
    """The most threads process ``pid`` had, sampled every 20 ms while watching."""

    def __init__(self, pid: int) -> None:
        self.pid, self.most, self._stop = pid, threads_of(pid), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.02):
            self.most = max(self.most, threads_of(self.pid))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.most


def measure(width: int, rounds: int, records: int, clients: int) -> dict[str, float]:
    import ray

    from compat_core.run.ledger import host as ledger_host
    from compat_core.run.ledger.host import LedgerClient

    actor_class = ray.remote(num_cpus=0, max_task_retries=-1)(TimedHost)
    concurrency = ledger_host.ledger_concurrency(width)
    host = actor_class.options(max_concurrency=concurrency).remote(None)
    pid = ray.get(host.pid.remote())
    rss_before = rss_of(pid)
    run_id = f"width-{width}"
    journal = os.path.join(ledger_host.journal_dir(), f"{run_id}-{os.getpid()}.journal")
    ray.get(host.open_run.remote(run_id, width, {"journal_path": journal, "vote_timeout_s": 600.0}))
    ledger = LedgerClient(host, run_id, pid, journal, width)
    share = -(-width // clients)
    client_class = ray.remote(num_cpus=0, max_concurrency=4)(Ranks)
    players = [client_class.remote(ledger, first, min(share, width - first)) for first in range(0, width, share)]
    connected = sum(ray.get([p.connect.remote() for p in players]))
    assert connected == width, f"{connected} of {width} ranks reached the channel"
    watch = ThreadWatch(pid)
    ray.get([p.free_rounds.remote(0, 2) for p in players])  # warm-up: Ray's connections, the host's pools
    ray.get(host.vote_times.remote())
    cpu = cpu_of(pid)
    seen = ray.get([p.free_rounds.remote(2, rounds) for p in players])
    round_cpu = (cpu_of(pid) - cpu) / rounds
    rss_rounds = rss_of(pid)  # the ranks in step, as training keeps them
    host_latency = statistics.median(ray.get(host.vote_times.remote()))
    client_rounds = [max(s[i][1] for s in seen) - max(s[i][0] for s in seen) for i in range(rounds)]
    ray.get([p.forget.remote() for p in players])
    first = 2 + rounds
    cpu = cpu_of(pid)
    starts = ray.get([p.flood.remote(first, records) for p in players])
    last = first + records
    ray.get([host.call.remote(run_id, "stored_through", 0, rank, last, 600.0) for rank in range(width)])
    flood_s = time.monotonic() - min(starts)
    flood_cpu = cpu_of(pid) - cpu
    rss_flood = rss_of(pid)
    threads = watch.stop()
    for player in players:
        ray.kill(player)
    ray.get(host.close_run.remote(run_id))
    ray.kill(host)
    for path in (journal, journal.removesuffix(".journal") + ".result"):
        if os.path.exists(path):
            os.remove(path)
    return {
        "width": width,
        "vote_ms": host_latency * 1000,
        "round_ms": statistics.median(client_rounds) * 1000,
        "round_cpu_ms": round_cpu * 1000,
        "records_per_s": width * records / flood_s,
        "record_cpu_us": flood_cpu / (width * records) * 1e6,
        "threads": threads,
        "kb_per_rank": (rss_rounds - rss_before) / width / 1024,
        "kb_per_rank_flood": (rss_flood - rss_before) / width / 1024,
    }


def light_loop(config: dict[str, Any]) -> None:
    """Reports, trains nothing; rank 0's time per round rides on its last report, which carries
    a small checkpoint (kept by every semantics)."""
    import tempfile

    from ray.train import Checkpoint

    report = config["report"]
    start = time.perf_counter()
    for step in range(config["rounds"]):
        report({"step": step})
    elapsed = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as directory:
        report({"step": config["rounds"], "elapsed": elapsed}, checkpoint=Checkpoint.from_directory(directory))


def real_fit(kind: str, semantics: str, workers: int, rounds: int, storage: str) -> float:
    """One fit; rank 0's seconds per round. ``kind``: ``raw`` or ``compat``; ``semantics``:
    ``v1``, ``v1-on-v2`` (raw: V1) or ``v2``."""
    config: dict[str, Any] = {"rounds": rounds}
    os.environ["RAY_TRAIN_V2_ENABLED"] = "1" if semantics == "v2" else "0"
    if kind == "compat":
        import compat

        os.environ["COMPAT_V1_ENGINE"] = "v2" if semantics == "v1-on-v2" else "v1"
        config["report"] = compat.report
        quiet = {} if semantics == "v2" else {"verbose": 0}
        result = compat.DataParallelTrainer(
            light_loop,
            train_loop_config=config,
            scaling_config=compat.ScalingConfig(num_workers=workers),
            run_config=compat.RunConfig(storage_path=storage, **quiet),
        ).fit()
        frame = result.worker_metrics_dataframe
        assert len(frame) == workers * (rounds + 1), f"{len(frame)} of {workers * (rounds + 1)} reports kept"
        return float(frame["elapsed"].dropna().iloc[0]) / rounds
    if semantics == "v2":
        from ray.train.v2.api.config import RunConfig, ScalingConfig
        from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer
        from ray.train.v2.api.train_fn_utils import report

        config["report"] = report
        os.environ["RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"] = "0.05"  # compat's poll: only compat's work differs
        try:
            result = DataParallelTrainer(
                light_loop,
                train_loop_config=config,
                scaling_config=ScalingConfig(num_workers=workers),
                run_config=RunConfig(storage_path=storage),
            ).fit()
        finally:
            os.environ.pop("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", None)
        return float(result.metrics["elapsed"]) / rounds
    from ray.air.config import RunConfig as V1RunConfig
    from ray.air.config import ScalingConfig as V1ScalingConfig
    from ray.train._internal.session import report as v1_report
    from ray.train.data_parallel_trainer import DataParallelTrainer as V1DataParallelTrainer

    config["report"] = v1_report
    result = V1DataParallelTrainer(
        light_loop,
        train_loop_config=config,
        scaling_config=V1ScalingConfig(num_workers=workers),
        run_config=V1RunConfig(storage_path=storage, verbose=0),
    ).fit()
    assert len(result.metrics_dataframe) == rounds + 1  # V1 keeps every report of rank 0
    return float(result.metrics["elapsed"]) / rounds


def real_width(widths: list[int], rounds: int, repeat: int) -> None:
    import tempfile

    print("workers | semantics (engine) | raw per round | compat per round | compat/raw")
    print("---|---|---|---|---")
    for workers in widths:
        for semantics in ("v1", "v1-on-v2", "v2"):
            samples: dict[str, list[float]] = {"raw": [], "compat": []}
            for turn in range(repeat):
                for kind in ("raw", "compat") if turn % 2 == 0 else ("compat", "raw"):
                    with tempfile.TemporaryDirectory() as storage:
                        samples[kind].append(real_fit(kind, semantics, workers, rounds, storage))
            raw, ours = statistics.median(samples["raw"]), statistics.median(samples["compat"])
            engine = {"v1": "V1 on V1's engine", "v1-on-v2": "V1 on V2's engine (raw: V1)", "v2": "V2"}[semantics]
            print(f"{workers} | {engine} | {raw * 1000:.1f} ms | {ours * 1000:.1f} ms | {ours / raw:.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", type=int, nargs="+", default=[64, 256, 1024, 4096])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--records", type=int, default=200, help="records per rank in the records/s phase")
    parser.add_argument("--clients", type=int, default=2, help="client processes playing the ranks")
    parser.add_argument("--real", type=int, nargs="+", help="real fits with these numbers of light workers")
    parser.add_argument("--repeat", type=int, default=2, help="turns of raw and compat fits (--real)")
    args = parser.parse_args()

    import ray

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    if args.real:
        ray.init(address="local", num_cpus=64, include_dashboard=False, log_to_driver=False)
        try:
            real_width(args.real, args.rounds if args.rounds != 20 else 40, args.repeat)
        finally:
            ray.shutdown()
        return
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        header = (
            "width | vote (host) | round (clients) | Ray's floor: round | host CPU/round | records/s | "
            "host CPU/record | threads | KB/rank | Ray's floor: KB/rank | KB/rank after the flood"
        )
        print(header)
        print("|".join("---" for _ in header.split("|")))
        for width in args.widths:
            m = measure(width, args.rounds, args.records, args.clients)
            floor_round, floor_per_rank = floor(width, args.rounds, args.clients)
            cells = [
                f"{m['width']:,}",
                f"{m['vote_ms']:.1f} ms",
                f"{m['round_ms']:.0f} ms",
                f"{floor_round * 1000:.0f} ms",
                f"{m['round_cpu_ms']:.0f} ms",
                f"{m['records_per_s']:,.0f}",
                f"{m['record_cpu_us']:.1f} us",
                f"{m['threads']:.0f}",
                f"{m['kb_per_rank']:.1f}",
                f"{floor_per_rank / 1024:.1f}",
                f"{m['kb_per_rank_flood']:.1f}",
            ]
            print(" | ".join(cells), flush=True)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
