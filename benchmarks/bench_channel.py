"""The record channel under load and under attack, on this machine.

    python -m benchmarks.bench_channel [--record-mb 128] [--rounds 10] [--repeat 2]

- **a large record**: one record holding a ``--record-mb`` MB numpy array, written by a worker
  process to a ledger's channel (``compat_core.run.channel``: the key exchange, the frame, the
  host's reader): from the first byte written to the record delivered, unpickled, to the ledger,
  as MB/s; beside it the socket's own speed on the same loopback (a reader receiving the same
  bytes into one buffer, nothing else), the ceiling.
- **hostile peers on a live run**: a real fit (``DataParallelTrainer``, one worker, ``--rounds``
  reports, failing once after its second report so that ``FailureConfig(max_failures=1)``
  restarts it and the new worker connects again), clean and then with 8 idle and 8 slow-drip
  peers on the ledger's port (peers without the key: an idle one connects and sends nothing, a
  drip one announces an answer to the key challenge and sends it a byte every 0.2 s; each is
  replaced as soon as the host drops it, so 16 are always pending). The fit's wall time, median
  of ``--repeat`` turns, in V1 semantics (V1's engine) and V2 semantics; the cost is the hostile
  fit's minus the clean one's.

All numbers come from one run of this command; docs/performance.md has them.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def socket_speed(size: int) -> float:
    """MB/s of ``size`` bytes over loopback into one preallocated buffer (the ceiling)."""
    server = socket.create_server(("127.0.0.1", 0))
    payload = bytes(size)
    sender = threading.Thread(
        target=lambda: socket.create_connection(server.getsockname()).sendall(payload), daemon=True
    )
    started = time.perf_counter()
    sender.start()
    conn, _ = server.accept()
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        got += conn.recv_into(view[got:], min(size - got, 4 * 1024 * 1024))
    elapsed = time.perf_counter() - started
    conn.close()
    server.close()
    return size / elapsed / 1e6


def channel_speed(size_mb: int) -> tuple[float, float]:
    """MB/s of one record of ``size_mb`` MB through the channel (a worker process writing it),
    and the host's CPU seconds for it."""
    import resource

    from compat_core.run import channel

    delivered = threading.Event()
    at: list[float] = []

    def deliver(batch: list[tuple[Any, bytes]]) -> None:
        at.append(time.perf_counter())
        delivered.set()

    listener = channel.Listener("127.0.0.1", deliver)
    script = (
        "import sys, time, numpy as np\n"
        "from compat_core.run import channel\n"
        f"sender = channel.connect({listener.address!r})\n"
        f"big = np.ones({size_mb * 1024 * 1024 // 8}, dtype=np.float64)\n"
        "sys.stdout.write(f'{time.perf_counter()!r}\\n'); sys.stdout.flush()\n"
        "assert sender.send(({'big': big}, None))\n"
        "sys.stdin.read()\n"
    )
    env = {**os.environ, "PYTHONPATH": ROOT, "COMPAT_RECORD_MAX_BYTES": str(2 * size_mb * 1024 * 1024)}
    worker = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert worker.stdout is not None and worker.stdin is not None
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    started = float(worker.stdout.readline())  # perf_counter is the same clock across processes here
    if not delivered.wait(600):
        raise RuntimeError("the record was not delivered within 10 minutes")
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    worker.stdin.close()
    worker.wait()
    listener.close()
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return size_mb * 1024 * 1024 / (at[0] - started) / 1e6, cpu


class Hostile:
    """8 idle and 8 slow-drip peers on ``host:port``, each replaced as soon as the host drops it."""

    def __init__(self, host: str, port: int, idle: int = 8, drip: int = 8) -> None:
        self._address = (host, port)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._peer, args=(False,), daemon=True) for _ in range(idle)]
        self._threads += [threading.Thread(target=self._peer, args=(True,), daemon=True) for _ in range(drip)]
        self.connections = 0
        for thread in self._threads:
            thread.start()

    def _peer(self, drips: bool) -> None:
        while not self._stop.is_set():
            try:
                peer = socket.create_connection(self._address, timeout=1)
            except OSError:
                self._stop.wait(0.1)
                continue
            self.connections += 1
            with peer:
                peer.settimeout(0.2)
                if drips:
                    peer.sendall(struct.pack("!i", 250))
                while not self._stop.is_set():
                    try:
                        if drips:
                            peer.send(b"\x01")
                        if peer.recv(4096) == b"":
                            break  # the host dropped it: connect again
                    except TimeoutError:
                        continue
                    except OSError:
                        break

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


def connect_time(address: Any) -> float:
    """Seconds for one worker connection to the channel at ``address`` (connect and key)."""
    from compat_core.run import channel

    started = time.perf_counter()
    sender = channel.connect(address)
    elapsed = time.perf_counter() - started
    assert sender is not None, "the worker could not connect"
    sender.close()
    return elapsed


def connects(count: int, hostile: bool) -> list[float]:
    """``count`` worker connections to a ledger's channel in this process, with or without the
    16 hostile peers on its port."""
    from compat_core.run import channel

    listener = channel.Listener("127.0.0.1", lambda batch: None)
    attacker = Hostile("127.0.0.1", listener.address[1]) if hostile else None
    if attacker is not None:
        while attacker.connections < 16:
            time.sleep(0.01)
    try:
        return [connect_time(listener.address) for _ in range(count)]
    finally:
        if attacker is not None:
            attacker.close()
        listener.close()


def train_loop(config: dict[str, Any]) -> None:
    import compat as train
    from compat_core.run import worker

    session = worker._session
    assert session is not None and session.address is not None, "the record channel is not in use"
    with open(config["port_file"], "w") as f:
        f.write(f"{session.address[0]} {session.address[1]}")
    first_attempt = not os.path.exists(config["port_file"] + ".failed")
    if not first_attempt:  # the peers are on the port by now: one more connection, timed
        while not os.path.exists(config["port_file"] + ".attacked") and config["hostile"]:
            time.sleep(0.01)
        with open(config["port_file"] + ".connect", "w") as f:
            f.write(repr(connect_time(session.address)))
        # The worker's own connection carries its records, not actor calls (the fallback).
        assert session.sender is not None and not session.sender.broken, "the worker fell back to actor calls"
    for step in range(config["rounds"]):
        train.report({"step": step})
        if first_attempt and step == 1:
            open(config["port_file"] + ".failed", "w").close()
            raise RuntimeError("fails once: the restarted worker connects to the channel again")


def one_fit(semantics: str, rounds: int, hostile: bool, storage: str) -> tuple[float, float]:
    """The fit's wall time and the restarted worker's time to connect to the channel."""
    os.environ["RAY_TRAIN_V2_ENABLED"] = "1" if semantics == "v2" else "0"
    import compat as train

    with tempfile.TemporaryDirectory() as scratch:
        port_file = os.path.join(scratch, "port")
        attackers: list[Hostile] = []

        def attack() -> None:
            while not os.path.exists(port_file) or not open(port_file).read():
                time.sleep(0.01)
            host, port = open(port_file).read().split()
            attackers.append(Hostile(host, int(port)))
            while attackers[0].connections < 16:
                time.sleep(0.01)
            open(port_file + ".attacked", "w").close()

        if hostile:
            threading.Thread(target=attack, daemon=True).start()
        started = time.perf_counter()
        result = train.DataParallelTrainer(
            train_loop,
            train_loop_config={"rounds": rounds, "port_file": port_file, "hostile": hostile},
            scaling_config=train.ScalingConfig(num_workers=1),
            run_config=train.RunConfig(
                storage_path=storage, name=f"{semantics}-{hostile}-{time.time_ns()}",
                failure_config=train.FailureConfig(max_failures=1),
            ),
        ).fit()  # fmt: skip
        elapsed = time.perf_counter() - started
        for attacker in attackers:
            attacker.close()
        if hostile:
            assert attackers and attackers[0].connections >= 16, "the peers never reached the host"
        frame = result.worker_metrics_dataframe
        assert list(frame["step"]) == [0, 1, *range(rounds)], list(frame["step"])  # every report, once
        return elapsed, float(open(port_file + ".connect").read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record-mb", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--connects", type=int, default=20, help="worker connections timed, clean and hostile")
    parser.add_argument("--skip-live", action="store_true", help="only the parts without Ray")
    args = parser.parse_args()

    size = args.record_mb * 1024 * 1024
    print(f"socket (ceiling): {socket_speed(size):.0f} MB/s")
    speed, cpu = channel_speed(args.record_mb)
    print(f"channel, one {args.record_mb} MB record: {speed:.0f} MB/s, host CPU {cpu:.2f} s")
    clean_connects, hostile_connects = connects(args.connects, False), connects(args.connects, True)
    print(
        f"a worker's connect and key, {args.connects} each: "
        f"clean median {statistics.median(clean_connects) * 1e3:.1f} ms "
        f"(max {max(clean_connects) * 1e3:.1f}), with 8 idle + 8 drip peers median "
        f"{statistics.median(hostile_connects) * 1e3:.1f} ms (max {max(hostile_connects) * 1e3:.1f})",
        flush=True,
    )
    if args.skip_live:
        return

    import ray

    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as storage:
            for semantics in ("v1", "v2"):
                one_fit(semantics, args.rounds, False, storage)  # warm: Ray's workers, imports
                clean, hostile = [], []
                for _ in range(args.repeat):
                    clean.append(one_fit(semantics, args.rounds, False, storage))
                    hostile.append(one_fit(semantics, args.rounds, True, storage))
                c, h = (statistics.median(t for t, _ in fits) for fits in (clean, hostile))
                cc, hc = (statistics.median(k for _, k in fits) * 1e3 for fits in (clean, hostile))
                print(
                    f"{semantics}: fit clean {c:.2f} s, with 8 idle + 8 drip peers {h:.2f} s ({h - c:+.2f} s); "
                    f"the restarted worker's connect and key: clean {cc:.1f} ms, hostile {hc:.1f} ms "
                    f"(fits: clean {[round(t, 2) for t, _ in clean]}, hostile {[round(t, 2) for t, _ in hostile]})",
                    flush=True,
                )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
