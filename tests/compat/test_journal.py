"""The run ledger's journal: for any schedule of what a run tells its ledger (records sent once
or again, validation outcomes, workers ending or failing, the engine's failures, attempts),
a snapshot recovered from the journal after the host's process is gone equals the one the
ledger would have handed over; a frame cut short by the process dying is ignored."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compat_core.run.ledger import Record, RunLedger
from compat_core.run.ledger.journal import Journal, read
from compat_core.run.ledger.run import recover
from compat_core.semantics.rounds import CheckpointStatus, ValidationOutcome
from compat_core.usage import Usage

pytestmark = pytest.mark.one_pass  # plain code: no Ray cluster, no mode


@st.composite
def schedules(draw):
    world = draw(st.integers(1, 3))
    attempts = []
    for attempt in range(draw(st.integers(1, 2))):
        rounds = draw(st.integers(0, 4))
        sent = {rank: draw(st.integers(0, rounds)) for rank in range(world)}  # a rank may stop early
        records = [
            Record(rank, index, {"loss": draw(st.floats(allow_nan=False)), "rank": rank},
                   has_checkpoint=index % 2 == 0, wants_validation=False, timestamp=float(index),
                   checkpoint=f"ckpt-{attempt}-{index}" if index % 2 == 0 else None, attempt=attempt,
                   usages=[Usage("free-floating-report", 1, "job.py:3")] if index % 2 else [])
            for rank in range(world)
            for index in range(sent[rank])
        ]  # fmt: skip
        order = draw(st.permutations(records))
        again = draw(st.lists(st.sampled_from(records), max_size=2)) if records else []  # sent again
        validated = draw(st.lists(st.integers(0, max(rounds - 1, 0)), max_size=2, unique=True)) if rounds else []
        failing = draw(st.sets(st.integers(0, world - 1), max_size=world))
        engine = draw(st.booleans())
        attempts.append((attempt, sent, [*order, *again], validated, failing, engine))
    return world, attempts


def tell(ledger: RunLedger, attempts) -> None:
    """Play the schedule to the ledger, as workers and the engine would."""
    for attempt, sent, records, validated, failing, engine in attempts:
        for rank in sent:
            assert ledger.worker_started(rank, f"actor-{attempt}-{rank}") == attempt
        for record in records:
            ledger.record(record)
        for index in validated:
            outcome = ValidationOutcome(CheckpointStatus.VALIDATED, {"score": float(index)})
            ledger._store.add_validation((attempt, index), outcome)  # what a validation's thread stores
        for rank in sorted(sent, key=lambda r: r in failing):  # the failing ranks end last
            error = RuntimeError(f"rank {rank} failed") if rank in failing else None
            ledger.worker_done(rank, {"rank": rank}, [Usage("session-api", 1, "job.py:9")], error, attempt, sent[rank])
        if engine:
            ledger.engine_failed({0: ConnectionError("the node went away")})


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
    )


@pytest.fixture
def no_grace(monkeypatch):
    """A failure does not wait for the other ranks' records: every record of the schedule is
    told before the failures (the waits are tests/compat/test_ledger.py's)."""
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


def test_an_event_that_cannot_be_kept_costs_its_durability_not_the_run(tmp_path, caplog) -> None:
    import threading

    ledger = RunLedger(1, journal_path=str(tmp_path / "run.journal"))
    unpicklable = Record(0, 0, {"lock": threading.Lock()}, False, False, 0.0)  # arrived in-process
    ledger.record(unpicklable)
    ledger.record(Record(0, 1, {"loss": 0.5}, False, False, 0.0))
    assert [r.index for r in ledger.close().records] == [0, 1]  # the run has both
    assert [r.index for r in recover(str(tmp_path / "run.journal"), 1, "killed").records] == [1]
    assert "cannot keep a 'record' event" in caplog.text


def test_journals_of_drivers_that_died_long_ago_are_pruned(tmp_path) -> None:
    import os

    from compat_core.run.ledger.journal import prune

    old, fresh, other = tmp_path / "old.journal", tmp_path / "fresh.journal", tmp_path / "notes.txt"
    for path in (old, fresh, other):
        path.write_text("x")
    os.utime(old, (1000.0, 1000.0))
    os.utime(other, (1000.0, 1000.0))
    assert prune(str(tmp_path), max_age_s=3600.0, now=8200.0) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.journal", "notes.txt"]
    assert prune(str(tmp_path / "missing"), 1.0, 0.0) == 0
