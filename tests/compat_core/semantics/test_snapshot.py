"""What the driver holds of a run after ``fit()``: the ledger's snapshot reads the run's records
from the journal it owns, one at a time; what the driver needs of every record is made in one
pass (``LedgerSnapshot.digest``), and the result's ``report_rounds`` and
``worker_metrics_dataframe`` only when read. Plain code: no Ray cluster."""

from __future__ import annotations

import gc
import math
import os
import pickle
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compat_core.files import journal as journals
from compat_core.run.ledger import RunLedger
from compat_core.semantics import result
from compat_core.semantics.records import LedgerSnapshot, Record
from compat_core.semantics.rounds import CheckpointStatus, ValidationOutcome, non_finite_keys
from compat_core.switch import V1, V2, Mode

pytestmark = pytest.mark.one_pass  # plain code: no Ray cluster, no mode

KEYS = ("loss", "acc", "lr")
VALUES = st.one_of(
    st.floats(), st.integers(-3, 3), st.dictionaries(st.sampled_from(("a", "b")), st.floats(), max_size=2)
)


@st.composite
def runs(draw):
    """A run's records as a journal holds them: any order, each once; a rank of an attempt may
    stop early (its last rounds incomplete), or skip a round that a resend brings later."""
    world = draw(st.integers(1, 3))
    records = []
    for attempt in range(draw(st.integers(1, 3))):
        rounds = draw(st.integers(0, 5))
        for rank in range(world):
            sent = list(range(draw(st.integers(0, rounds))))
            if sent and draw(st.booleans()):
                sent.remove(draw(st.sampled_from(sent)))  # a record lost on its way, the run goes on
            for index in sent:
                keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=3))
                has_checkpoint = draw(st.booleans())
                records.append(
                    Record(rank, index, {k: draw(VALUES) for k in keys}, has_checkpoint, draw(st.booleans()),
                           float(index), checkpoint=f"/runs/r/checkpoint_{attempt}_{index}" if has_checkpoint else None,
                           checkpoint_dir_name=f"checkpoint_{attempt}_{index}" if has_checkpoint else None,
                           attempt=attempt)
                )  # fmt: skip
    order = draw(st.permutations(records))
    keys = sorted({r.key for r in records})
    validated = draw(st.lists(st.sampled_from(keys), unique=True)) if keys else []
    return world, order, {key: ValidationOutcome(CheckpointStatus.VALIDATED, {"score": 1.0}) for key in validated}


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(run=runs())
def test_the_digest_made_in_one_pass_says_what_every_record_read_at_once_says(run) -> None:
    world, records, validations = run
    snapshot = LedgerSnapshot(world, validations, None, [], {}, [], unjournaled=list(records))
    rounds = snapshot.rounds()
    digest = snapshot.digest
    assert digest.checkpoint_rounds == [r for r in rounds if r.has_checkpoint]
    assert digest.rank0_keys == {k for r in rounds for k in r.rank0_metrics}
    expected: dict[str, tuple[int, tuple[int, int, int]]] = {}
    for record in sorted(records, key=lambda r: (r.attempt, r.index, r.rank)):
        for key in non_finite_keys(record.metrics):
            count, first = expected.get(key, (0, (record.attempt, record.index, record.rank)))
            expected[key] = (count + 1, first)
    assert digest.non_finite == expected
    first = next((r.checkpoint for r in records if r.checkpoint is not None), None)
    assert digest.first_checkpoint == first


def journaled_run(path: str, rounds: int, world: int = 2, checkpoints: int = 5) -> LedgerSnapshot:
    """A closed run of ``rounds`` rounds of 10 metrics, ``checkpoints`` of them with a checkpoint
    (the last of each part), as the driver gets it: its journal the snapshot's."""
    every = rounds // checkpoints
    ledger = RunLedger(world, journal_path=path)
    for index in range(rounds):
        for rank in range(world):
            metrics = {f"metric_{k}": index + k / 10 for k in range(10)}
            checkpointed = index % every == every - 1
            name = f"checkpoint_{index:06d}" if checkpointed else None
            ledger.record(Record(rank, index, metrics, checkpointed, False, 1.8e9 + index, checkpoint_dir_name=name))
    snapshot = ledger.close()
    snapshot.keep_journal()
    return snapshot


def test_the_driver_holds_memory_independent_of_the_runs_length(tmp_path) -> None:
    import tracemalloc

    def held(rounds: int) -> tuple[int, result.Result, LedgerSnapshot]:
        snapshot = journaled_run(str(tmp_path / f"{rounds}.journal"), rounds)
        gc.collect()
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            digest = snapshot.digest
            parts = result.ResultParts(None, str(tmp_path), None, [], [])
            outcome = result.build(Mode(V2, V2), parts, snapshot, None, None)
            gc.collect()
            live = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        assert len(digest.checkpoint_rounds) == 5  # what it holds grows with these, not with reports
        return live, outcome, snapshot

    short, long = held(500), held(2000)
    records = 2 * (2000 - 500)
    assert (long[0] - short[0]) / records < 10, (short[0], long[0])  # before: about 1,500 bytes a record
    # What it did not hold, it reads when asked: every round, every report.
    outcome, snapshot = long[1], long[2]
    assert outcome.report_rounds == snapshot.rounds() and len(outcome.report_rounds) == 2000
    assert len(outcome.worker_metrics_dataframe) == 4000


def test_report_rounds_is_read_with_the_engines_revision_and_a_result_prints_without_reading_it(tmp_path) -> None:
    snapshot = journaled_run(str(tmp_path / "run.journal"), 100)
    done = ValidationOutcome(CheckpointStatus.VALIDATED, {"score": 2.0})

    def revise(rounds):  # as V2's engine: the validations its controller ran
        return [r if r.index != 19 else r.__class__(r.index, r.reports, r.checkpoint_dir_name, done) for r in rounds]

    outcome = result.build(Mode(V2, V2), result.ResultParts(None, "", None, [], [], revise), snapshot, None, None)
    assert "report_rounds" not in repr(outcome) and "_report_rounds_value" in outcome.__dict__
    assert isinstance(outcome.__dict__["_report_rounds_value"], result.Load)  # printing it did not read it
    assert [r.validation for r in outcome.report_rounds if r.has_checkpoint] == [done, None, None, None, None]
    # A result that is not made by fit() has no rounds, as before.
    assert result.Result(backend="v1", metrics=None, checkpoint=None, error=None, path="").report_rounds == []


def test_the_snapshot_owns_its_journal_until_it_goes(tmp_path) -> None:
    path = str(tmp_path / "run.journal")
    snapshot = journaled_run(path, 10)
    kept = snapshot.journal_path
    assert not os.path.exists(path) and kept == str(tmp_path / f"run.{os.getpid()}.result") and os.path.exists(kept)
    # Pickled (a result sent elsewhere), it carries its records, not a path on this node.
    copy = pickle.loads(pickle.dumps(snapshot))
    assert copy.journal_path is None and [r.metrics for r in copy.records] == [r.metrics for r in snapshot.records]
    outcome = result.build(Mode(V1, V1), result.ResultParts(None, "", None, [], []), snapshot, None, None)
    del snapshot
    gc.collect()
    assert os.path.exists(kept)  # the result still reads from it
    assert len(outcome.report_rounds) == 10
    del outcome
    gc.collect()
    assert not os.path.exists(kept)  # gone with the last result that read from it


def test_a_snapshots_journal_left_by_a_process_that_died_is_pruned_and_a_live_ones_is_not(tmp_path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    theirs = tmp_path / f"a.{int(dead.stdout)}.result"
    mine = tmp_path / f"b.{os.getpid()}.result"
    for path in (theirs, mine):
        path.write_bytes(b"")
    assert journals.prune(str(tmp_path), max_age_s=math.inf, now=0.0) == 1
    assert not theirs.exists() and mine.exists()
