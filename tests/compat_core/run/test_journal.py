"""The run ledger's journal: for any schedule of what a run tells its ledger (records sent once
or again, validation outcomes, workers ending or failing, the engine's failures, attempts),
a snapshot recovered from the journal after the host's process is gone equals the one the
ledger would have handed over; a frame cut short by the process dying is ignored."""

from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compat_core.files.journal import Journal, read
from compat_core.migration.usage import Usage
from compat_core.run.ledger import RunLedger
from compat_core.run.ledger.replay import recover, reopen
from compat_core.semantics.records import Record
from compat_core.semantics.rounds import CheckpointStatus, ValidationOutcome

pytestmark = pytest.mark.one_pass  # plain code: no Ray cluster, no mode


@st.composite
def schedules(draw):
    world = draw(st.integers(1, 3))
    elastic = draw(st.booleans())  # V2's engine: each attempt a worker group, of any size up to the run's
    attempts = []
    for attempt in range(draw(st.integers(1, 2))):
        size = draw(st.integers(1, world)) if elastic else world
        group = (f"group-{attempt}", size) if elastic else None
        rounds = draw(st.integers(0, 4))
        sent = {rank: draw(st.integers(0, rounds)) for rank in range(size)}  # a rank may stop early
        records = [
            Record(rank, index, {"loss": draw(st.floats(allow_nan=False)), "rank": rank},
                   has_checkpoint=index % 2 == 0, wants_validation=False, timestamp=float(index),
                   checkpoint=f"ckpt-{attempt}-{index}" if index % 2 == 0 else None, attempt=attempt,
                   usages=[Usage("free-floating-report", 1, "job.py:3")] if index % 2 else [])
            for rank in range(size)
            for index in range(sent[rank])
        ]  # fmt: skip
        order = draw(st.permutations(records))
        again = draw(st.lists(st.sampled_from(records), max_size=2)) if records else []  # sent again
        validated = draw(st.lists(st.integers(0, max(rounds - 1, 0)), max_size=2, unique=True)) if rounds else []
        failing = draw(st.sets(st.integers(0, size - 1), max_size=size))
        engine = draw(st.booleans())
        attempts.append((attempt, sent, [*order, *again], validated, failing, engine, group))
    return world, attempts


def steps(attempts) -> list:
    """The schedule as the calls workers and the engine make, each a function of the ledger."""
    calls = []
    for attempt, sent, records, validated, failing, engine, group in attempts:
        for rank in sent:
            calls.append(lambda ledger, rank=rank, attempt=attempt, group=group: _started(ledger, rank, attempt, group))
        for record in records:
            calls.append(lambda ledger, record=record: ledger.record(record))
        for index in validated:
            outcome = ValidationOutcome(CheckpointStatus.VALIDATED, {"score": float(index)})
            key = (attempt, index)  # what a validation's thread stores:
            calls.append(lambda ledger, key=key, outcome=outcome: ledger._store.add_validation(key, outcome))
        for rank in sorted(sent, key=lambda r: r in failing):  # the failing ranks end last
            error = RuntimeError(f"rank {rank} failed") if rank in failing else None
            usages = [Usage("session-api", 1, "job.py:9")]
            calls.append(
                lambda ledger, a=(rank, {"rank": rank}, usages, error, attempt, sent[rank]): ledger.worker_done(*a)
            )
        if engine:
            calls.append(lambda ledger: ledger.engine_failed({0: ConnectionError("the node went away")}))
    return calls


def _started(ledger: RunLedger, rank: int, attempt: int, group: tuple[str, int] | None) -> None:
    assert ledger.worker_started(rank, f"actor-{attempt}-{rank}", *(group or ())) == attempt


def tell(ledger: RunLedger, attempts) -> None:
    """Play the schedule to the ledger, as workers and the engine would."""
    for call in steps(attempts):
        call(ledger)


def plain(snapshot):
    """A snapshot's content, errors by type and message."""
    return (
        [(r.attempt, r.rank, r.index, r.metrics, r.checkpoint) for r in snapshot.records],
        dict(snapshot.validations),
        snapshot.return_value,
        sorted((u.kind, u.count) for u in snapshot.usages),
        [{rank: (type(e).__name__, str(e)) for rank, e in attempt.items()} for attempt in snapshot.failures],
        snapshot.attempts,
        [(r.attempt, r.index) for r in snapshot.rounds()],
        snapshot.world_sizes,
        snapshot.digest.complete_rounds,
    )


@pytest.fixture
def no_grace(monkeypatch):
    """A failure does not wait for the other ranks' records: every record of the schedule is
    told before the failures (the waits are tests/compat_core/run/test_ledger.py's)."""
    from compat_core.run.ledger import run

    monkeypatch.setattr(run, "GRACE_S", 0.0)
    monkeypatch.setattr(run, "ENGINE_GRACE_S", 0.0)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(schedule=schedules())
def test_a_run_recovered_from_its_journal_equals_the_run_its_ledger_kept(tmp_path_factory, no_grace, schedule) -> None:
    world, attempts = schedule
    path = str(tmp_path_factory.mktemp("journal") / "run.journal")
    ledger = RunLedger(world, journal_path=path)
    tell(ledger, attempts)
    kept = ledger.close()
    recovered = recover(path, world, "killed")
    assert plain(recovered) == plain(kept)
    assert recovered.host_lost == "killed" and kept.host_lost is None


def test_a_frame_cut_short_by_the_dying_process_is_ignored(tmp_path) -> None:
    path = str(tmp_path / "run.journal")
    journal = Journal(path)
    journal.append("record", Record(0, 0, {"loss": 1.0}, False, False, 0.0))
    journal.append("record", Record(0, 1, {"loss": 0.5}, False, False, 0.0))
    journal.close()
    with open(path, "rb") as f:
        whole = f.read()
    with open(path, "wb") as f:
        f.write(whole[:-7])  # the host died inside its last write
    assert [event[1].index for event in read(path)] == [0]
    snapshot = recover(path, 1, "killed")
    assert [r.metrics for r in snapshot.records] == [{"loss": 1.0}]


def _gone_cluster() -> None:
    raise RuntimeError("System error: Ray has not been started yet")  # as an actor handle of a gone cluster


class _HandleOfAGoneCluster:
    """Loads as an actor handle of a cluster that is gone does (the trainer's validation config
    holds its run ledger's handle): it raises."""

    def __reduce__(self):
        return (_gone_cluster, ())


def test_a_new_driver_reads_a_killed_drivers_reports_and_validations_past_events_it_cannot_load(tmp_path) -> None:
    """A restore on another cluster reads the killed driver's journal for its records and
    validation outcomes: an event of another kind that holds the old cluster's handles (the
    validation config) is not loaded, so it does not cost them."""
    from compat_core.semantics.records import journaled_records, journaled_validations

    path = str(tmp_path / "run.journal")
    journal = Journal(path)
    journal.append("validation_config", _HandleOfAGoneCluster())
    for rank in (0, 1):
        record = Record(
            rank, 0, {"loss": 1.0}, True, True, 0.0, checkpoint=f"c{rank}", checkpoint_dir_name="checkpoint_000000"
        )
        journal.append("record", record, None)
    journal.append("validation", (0, 0), ValidationOutcome(CheckpointStatus.VALIDATED, {"score": 2.0}))
    journal.close()
    with pytest.raises(RuntimeError, match="has not been started"):
        list(read(path))  # every event, as a host rebuilding the run on its own cluster reads them
    assert [(r.rank, r.metrics) for r in journaled_records(path)] == [(0, {"loss": 1.0}), (1, {"loss": 1.0})]
    (validated,) = journaled_validations(path)
    assert validated.checkpoint_dir_name == "checkpoint_000000" and validated.validation.metrics == {"score": 2.0}


def test_a_record_a_killed_drivers_journal_cannot_give_back_costs_only_itself(tmp_path, monkeypatch) -> None:
    """A restore stores a killed driver's reports from its journal: a frame that does not load
    (a disk error, a class gone since) costs that report, with a warning naming the journal,
    not the others, nor the restored fit's own."""
    import socket

    from compat import _bookkeeping as bookkeeping
    from compat_core.files.pickled import CorruptStoredDataWarning
    from compat_core.files.storage import at
    from compat_core.run.ledger import host
    from compat_core.semantics import worker_reports
    from compat_core.semantics.records import LedgerSnapshot, journaled_records

    monkeypatch.setattr(host, "JOURNAL_DIR", str(tmp_path / "journals"))
    killed = str(tmp_path / "journals" / "killed.journal")
    journal = Journal(killed)
    journal.append("record", Record(0, 0, {"loss": 3.0}, False, False, 0.0), None)
    journal.append("record", _HandleOfAGoneCluster(), None)
    journal.append("record", Record(0, 1, {"loss": 2.0}, False, False, 0.0), None)
    journal.close()
    with pytest.warns(CorruptStoredDataWarning, match=r"killed\.journal"):
        assert [r.metrics["loss"] for r in journaled_records(killed)] == [3.0, 2.0]

    run = at(str(tmp_path / "run"))
    this_fit = LedgerSnapshot(1, {}, None, [], {}, [], unjournaled=[Record(0, 2, {"loss": 1.0}, False, False, 0.0)])
    with pytest.warns(CorruptStoredDataWarning, match=r"killed\.journal"):
        journals = ((socket.gethostname(), killed),)
        killed_validations = bookkeeping.validations_left_in_journals(journals)
        assert bookkeeping.keep_worker_reports(run, this_fit, journals, killed_validations) is not None
    assert list(worker_reports.read(run)["loss"]) == [3.0, 2.0, 1.0]


def test_an_event_that_cannot_be_kept_costs_its_durability_not_the_run(tmp_path, caplog) -> None:
    import threading

    ledger = RunLedger(1, journal_path=str(tmp_path / "run.journal"))
    unpicklable = Record(0, 0, {"lock": threading.Lock()}, False, False, 0.0)  # arrived in-process
    ledger.record(unpicklable)
    ledger.record(Record(0, 1, {"loss": 0.5}, False, False, 0.0))
    assert sorted(r.index for r in ledger.close().records) == [0, 1]  # the run has both (one kept in memory)
    assert [r.index for r in recover(str(tmp_path / "run.journal"), 1, "killed").records] == [1]
    assert "cannot keep a 'record' event" in caplog.text


def test_journals_of_drivers_that_died_long_ago_are_pruned(tmp_path) -> None:
    import os

    from compat_core.files.journal import prune

    old, fresh, other = tmp_path / "old.journal", tmp_path / "fresh.journal", tmp_path / "notes.txt"
    for path in (old, fresh, other):
        path.write_text("x")
    os.utime(old, (1000.0, 1000.0))
    os.utime(other, (1000.0, 1000.0))
    assert prune(str(tmp_path), max_age_s=3600.0, now=8200.0) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.journal", "notes.txt"]
    assert prune(str(tmp_path / "missing"), 1.0, 0.0) == 0


class CallsLog:
    """A UserCallback writing what it is called with to a file: the same file after the ledger
    that holds it was rebuilt in a restarted host (which unpickles it afresh from the journal)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def after_report(self, run_context, metrics, checkpoint) -> None:
        self._write(["after_report", [m["loss"] for m in metrics], checkpoint])

    def after_exception(self, run_context, failures) -> None:
        self._write(["after_exception", sorted(failures)])

    def _write(self, call) -> None:
        import json

        with open(self.path, "a") as f:
            f.write(json.dumps(call) + "\n")


def die(ledger: RunLedger, handed_over: bool = False) -> None:
    """The host's process dies between two calls: nothing more is handed over or journaled (a
    round being handed over when it died finishes first: a round's callbacks either ran and
    were journaled as delivered, or did not start). ``handed_over``: its delivery thread had
    caught up before it died."""
    delivery = ledger._delivery
    if handed_over:
        delivery.flush()
    with delivery._lock:
        delivery._finished = True
    delivery._waiting.set()
    ledger._journal.close()


def calls_in(path) -> list:
    import json

    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(schedule=schedules(), data=st.data())
def test_a_ledger_rebuilt_after_its_host_died_anywhere_ends_as_one_that_never_died(
    tmp_path_factory, no_grace, schedule, data
) -> None:
    """For any schedule of records (some sent again), validation outcomes, workers' ends and
    failures, and host deaths between any two calls (its rounds handed over by then or not; the
    last call answered or not, so that Ray sends it again to the restarted host): the ledger
    rebuilt from its journal each time (replay.reopen) and told the rest ends with the
    snapshot of one that never died, and its callbacks were called with every round and failed
    attempt once, in the same order."""
    world, attempts = schedule
    directory = tmp_path_factory.mktemp("restarts")
    called = data.draw(st.booleans(), label="callbacks")  # without: the consumer is the only one fed

    def callbacks(name: str) -> list:
        return [CallsLog(str(directory / name))] if called else []

    ledger = RunLedger(world, callbacks=callbacks("kept.jsonl"), journal_path=str(directory / "a"), consumers=("tune",))
    tell(ledger, attempts)
    fed = [round_keys(r) for r in ledger.delivered_since("tune", 0, flush=True)]
    kept = ledger.close()

    path = str(directory / "b")
    ledger = RunLedger(world, callbacks=callbacks("restarted.jsonl"), journal_path=path, consumers=("tune",))
    calls = steps(attempts)
    # Tune's forwarding reads what was delivered at any points of the run (the ledger then
    # forgets what it read, a restarted one too)
    reader = Reader()
    for position in sorted(data.draw(st.sets(st.integers(0, len(calls)), max_size=4), label="reads"), reverse=True):
        calls.insert(position, reader.read)
    where = st.integers(0, max(len(calls) - 1, 0))
    crashes = data.draw(st.dictionaries(where, st.tuples(st.booleans(), st.booleans()), max_size=3), label="crashes")
    for position, call in enumerate(calls):
        if position in crashes:
            handed_over, unanswered = crashes[position]
            die(ledger, handed_over)
            ledger = reopen(path)
            if unanswered and position > 0:
                calls[position - 1](ledger)  # Ray retries the call the dead host had not answered
        call(ledger)
    reader.read(ledger, flush=True)
    restarted = ledger.close()
    assert plain(restarted) == plain(kept)
    assert calls_in(directory / "restarted.jsonl") == calls_in(directory / "kept.jsonl")
    assert [reader.fed[i] for i in range(len(reader.fed))] == fed  # every round once, in order


def round_keys(round_) -> list:
    return sorted((r.attempt, r.index, r.rank) for r in round_.records.values())


class Reader:
    """A consumer of delivered rounds (as Tune's forwarding on the driver): what it was fed,
    by position (a call Ray sends again after a host died unanswered gives the same rounds)."""

    def __init__(self) -> None:
        self.fed: dict[int, list] = {}

    def read(self, ledger: RunLedger, flush: bool = False) -> None:
        count = len(self.fed)
        for offset, round_ in enumerate(ledger.delivered_since("tune", count, flush)):
            self.fed[count + offset] = round_keys(round_)


def test_a_restarted_host_gives_a_rank_that_asks_again_the_vote_the_others_acted_on(tmp_path) -> None:
    """Ray sends a call the dead host had not answered to the restarted one: a rank asking
    again about a round the others were told is free gets "free" at once, not a new vote."""
    path = str(tmp_path / "run.journal")
    ledger = RunLedger(2, journal_path=path, vote_timeout_s=30.0)
    assert ledger.vote_free_round(0, 4, 0, True, False) is False  # undecided yet: rank 0 would wait
    assert ledger.vote_free_round(0, 4, 1, True, True) is True  # every rank free: decided
    die(ledger)
    again = reopen(path)
    assert again.vote_free_round(0, 4, 0, True, True) is True  # at once: the journaled decision
    assert again.vote_free_round(0, 5, 0, False, False) is False  # the next round is voted as ever


def test_a_journal_cut_short_is_appended_to_after_its_last_whole_frame(tmp_path) -> None:
    path = str(tmp_path / "run.journal")
    ledger = RunLedger(1, journal_path=path)
    ledger.record(Record(0, 0, {"loss": 1.0}, False, False, 0.0))
    die(ledger)
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x01\x00half a frame")  # the host died inside a write
    again = reopen(path)
    again.record(Record(0, 1, {"loss": 0.5}, False, False, 0.0))
    die(again)
    assert [r.index for r in reopen(path).close().records] == [0, 1]


_GATE = threading.Event()  # while closed, a validation waits (the host is about to die)


def gated_runner(fn, checkpoint, kwargs, remote_kwargs, timeout_s):
    _GATE.wait(timeout=30)
    return ValidationOutcome(CheckpointStatus.VALIDATED, fn(checkpoint, **kwargs))


def test_a_validation_pending_when_the_host_died_is_run_by_the_restarted_one(tmp_path) -> None:
    from compat import ValidationConfig
    from compat_core.integration.validation import trainer_config

    path = str(tmp_path / "run.journal")
    _GATE.clear()
    ledger = RunLedger(1, validation_runner=gated_runner, journal_path=path)
    ledger.use_validation_config(trainer_config(ValidationConfig(fn=lambda ckpt: {"score": len(ckpt)})))
    ledger.record(Record(0, 0, {"loss": 1.0}, True, True, 0.0, checkpoint="ckpt"), ("ckpt", True))
    die(ledger)  # its validation is still running
    again = reopen(path)
    _GATE.set()
    snapshot = again.close()
    assert snapshot.validations[(0, 0)].metrics == {"score": 4}
    assert [r.validation.status for r in snapshot.rounds()] == [CheckpointStatus.VALIDATED]


def test_a_restarted_host_reopens_its_open_runs_and_a_closed_one_only_when_asked(tmp_path) -> None:
    """LedgerHost as Ray restarts it: the same constructor argument (its index of journals)."""
    from compat_core.run.ledger.host import LedgerHost

    index = str(tmp_path / "host.runs")
    host = LedgerHost(index)
    for run in ("open", "closed"):
        asyncio.run(host.open_run(run, 1, {"journal_path": str(tmp_path / f"{run}.journal")}))
        asyncio.run(host.call(run, "record", Record(0, 0, {"run": run}, False, False, 0.0)))
    kept = asyncio.run(host.close_run("closed"))
    assert asyncio.run(host.open_run("open", 1, {"journal_path": str(tmp_path / "open.journal")})) > 0  # a retried call
    die(host._runs["open"])
    again = LedgerHost(index)  # the process Ray restarted
    assert sorted(again._runs) == ["open"]
    asyncio.run(again.call("open", "record", Record(0, 1, {"run": "open"}, False, False, 0.0)))
    assert [r.index for r in asyncio.run(again.close_run("open")).records] == [0, 1]
    assert plain(asyncio.run(again.close_run("closed"))) == plain(kept)  # the driver asks again: rebuilt, closed
    with pytest.raises(KeyError, match="holds no run 'never'"):
        asyncio.run(again.call("never", "record", Record(0, 0, {}, False, False, 0.0)))


def test_a_bad_restart_limit_is_an_error_naming_the_variable(monkeypatch) -> None:
    from compat_core.run.ledger import host

    monkeypatch.setenv("COMPAT_LEDGER_MAX_RESTARTS", "many")
    with pytest.raises(ValueError, match=r"COMPAT_LEDGER_MAX_RESTARTS='many': give a whole number >= 0"):
        host.max_restarts()
    monkeypatch.setenv("COMPAT_LEDGER_MAX_RESTARTS", "0")
    assert host.max_restarts() == 0
    monkeypatch.delenv("COMPAT_LEDGER_MAX_RESTARTS")
    assert host.max_restarts() == host.MAX_RESTARTS == 3


def test_a_ledger_holds_memory_independent_of_the_runs_length_and_so_does_a_rebuilt_one(tmp_path) -> None:
    """The host's memory does not grow with a run (issue: compat adds no memory that grows with
    a run): 2 workers x 10 metrics a report, Tune's forwarding reading as it goes; what the
    ledger holds after 2,000 rounds is what it held after 500, within a few bytes a record,
    while the run goes on and in a host rebuilt from the journal; the records are all there
    for the snapshot (read from the journal)."""
    import gc
    import tracemalloc

    def run(rounds: int) -> tuple[int, int, int]:
        path = str(tmp_path / f"{rounds}.journal")
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            ledger = RunLedger(2, journal_path=path, consumers=("tune",))
            read = 0
            for index in range(rounds):
                for rank in (0, 1):
                    metrics = {f"metric_{k}": index + k / 10 for k in range(10)}
                    ledger.record(Record(rank, index, metrics, False, False, 1.8e9 + index))
                if index % 100 == 99:
                    read += len(ledger.delivered_since("tune", read))  # what Tune was given is Tune's
            assert ledger.delivered_since("tune", read) == []  # and it has read every round
            gc.collect()
            live = tracemalloc.get_traced_memory()[0] - start
            die(ledger, handed_over=True)
            del ledger
            gc.collect()
            start = tracemalloc.get_traced_memory()[0]
            rebuilt = reopen(path)
            gc.collect()
            reopened = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        snapshot = rebuilt.close()
        return live, reopened, len(snapshot.records)

    short, long = run(500), run(2000)
    assert (short[2], long[2]) == (1000, 4000)
    records = 2 * (2000 - 500)
    assert (long[0] - short[0]) / records < 16, (short, long)  # before: about 2,500 bytes a record
    assert (long[1] - short[1]) / records < 16, (short, long)


@pytest.mark.one_pass
def test_a_host_asks_ray_whether_it_was_restarted_without_a_deprecation_warning(ray_cluster) -> None:
    """Ray 2.60's ``was_current_actor_reconstructed`` reads its own deprecated ``actor_id``: the
    host's question printed a RayDeprecationWarning in every run (raw Ray's runs print none)."""
    import warnings

    import ray

    from compat_core.run.ledger import host

    @ray.remote(num_cpus=0)
    class Probe:
        def restarted(self) -> tuple[bool, list[str]]:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                restarted = host._reconstructed()
            return restarted, [f"{w.category.__name__}: {w.message}" for w in caught]

    assert ray.get(Probe.remote().restarted.remote()) == (False, [])


class _KindsSeen:
    """A usage sink (picklable: the journal keeps it): the kinds it was called with, in a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, usages: list[Usage]) -> None:
        with open(self.path, "a") as f:
            f.write(",".join(u.kind for u in usages) + "\n")


def test_the_usage_sink_hears_each_new_kind_once_and_a_restarted_host_keeps_telling_it(tmp_path) -> None:
    """A Tune trial's readiness record is kept again by the ledger each time the workers rely on
    a V1-only behaviour new to the run (Tune may end the trial's process at any report): the
    sink is called with every kind known, once per new kind, and a host rebuilt from the
    journal calls the same sink for the next one."""
    path = str(tmp_path / "run.journal")
    seen = tmp_path / "seen.txt"
    ledger = RunLedger(1, journal_path=path)
    ledger.keep_usages_with(_KindsSeen(str(seen)))
    assert not seen.exists()  # nothing relied on yet: nothing to say
    trial = Usage("trial-api", 1, "train.py:3")
    ledger.record(Record(0, 0, {"step": 0}, False, False, 0.0, usages=[trial]))
    ledger.record(Record(0, 1, {"step": 1}, False, False, 0.0, usages=[trial]))  # known: not told again
    assert seen.read_text().splitlines() == ["trial-api"]
    again = reopen(path)  # the host died and was restarted
    again.record(Record(0, 2, {"step": 2}, False, False, 0.0, usages=[Usage("session-api", 1, "train.py:5")]))
    assert seen.read_text().splitlines() == ["trial-api", "session-api,trial-api"]
