"""The run ledger as plain code: rounds, callbacks in order, validation, failures."""

import asyncio

import pytest

from compat.callbacks import UserCallback
from compat_core import messages, switch
from compat_core.integration.validation import trainer_config
from compat_core.migration.usage import Usage
from compat_core.releases import adapters, facts
from compat_core.run.ledger import RunLedger, task_options
from compat_core.semantics.records import Record
from compat_core.semantics.rounds import CheckpointStatus, ValidationOutcome


class Recorder(UserCallback):
    def __init__(self):
        self.calls = []
        self.exceptions = []

    def after_report(self, run_context, metrics, checkpoint):
        self.calls.append((metrics, checkpoint))

    def after_exception(self, run_context, worker_exceptions):
        self.exceptions.append(worker_exceptions)


def delivered(ledger, count):
    """Wait until ``count`` rounds were handed over (on the ledger's delivery thread)."""
    import time

    deadline = time.monotonic() + 10
    while len(ledger._delivery.delivered) < count and time.monotonic() < deadline:
        time.sleep(0.001)
    return len(ledger._delivery.delivered)


def rec(rank, index, ckpt=None, **metrics):
    return Record(rank, index, metrics, ckpt is not None, False, 0.0, ckpt, "c" if ckpt else None)


def test_after_report_fires_once_per_complete_round_in_order_even_if_records_arrive_out_of_order() -> None:
    cb = Recorder()
    ledger = RunLedger(2, callbacks=[cb])
    ledger.record(rec(0, 1, loss=2))
    ledger.record(rec(1, 1, loss=2.5))  # round 1 complete before round 0
    assert delivered(ledger, 0) == 0 and cb.calls == []
    ledger.record(rec(1, 0, loss=1.5))
    ledger.record(rec(0, 0, ckpt="CKPT", loss=1))
    assert delivered(ledger, 2) == 2
    assert cb.calls == [([{"loss": 1}, {"loss": 1.5}], "CKPT"), ([{"loss": 2}, {"loss": 2.5}], None)]


def test_snapshot_rounds_cut_at_an_incomplete_round() -> None:
    ledger = RunLedger(2)
    for r in (rec(0, 0, a=1), rec(1, 0, a=2), rec(0, 1, a=3)):
        ledger.record(r)
    snap = ledger.close()
    assert [r.index for r in snap.rounds()] == [0]
    assert len(snap.records) == 3  # nothing recorded is dropped


def test_a_raising_callback_is_recorded_and_others_still_run() -> None:
    class Boom(UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            raise ValueError("no disk")

    cb = Recorder()
    ledger = RunLedger(1, callbacks=[Boom(), cb])
    ledger.record(rec(0, 0, a=1))
    snap = ledger.close()
    assert len(cb.calls) == 1
    (failure,) = snap.callback_failures
    assert (failure.callback, failure.hook, failure.round_index) == ("Boom", "after_report", 0)
    assert "ValueError: no disk" in failure.message() and "Fix the callback" in failure.message()


def test_after_exception_gets_worker_errors_by_rank() -> None:
    cb = Recorder()
    ledger = RunLedger(2, callbacks=[cb])
    error = RuntimeError("oom")
    ledger.worker_done(1, None, [], error)
    ledger.worker_done(0, "ret", [Usage("free-floating-report", 2, "a.py:1")])
    snap = ledger.close()
    assert cb.exceptions == [{1: error}]
    assert snap.return_value == "ret"
    assert [(u.kind, u.count) for u in snap.usages] == [("free-floating-report", 2)]


def test_a_dead_worker_actor_fails_its_rank_and_a_dead_trainer_every_running_rank() -> None:
    """What V1's engine reports of a process that died without raising (v1/backend.py's
    EngineFailures): the dead actor's id, mapped to the rank it ran, once per attempt."""
    import pickle

    died = pickle.dumps(RuntimeError("actor died"))
    cb = Recorder()
    ledger = RunLedger(2, callbacks=[cb])
    assert [ledger.worker_started(rank, f"actor-{rank}") for rank in (0, 1)] == [0, 0]
    ledger.record(rec(0, 0, step=0))
    ledger.record(rec(1, 0, step=0))
    ledger.actor_died("actor-1", died)
    assert [list(e) for e in cb.exceptions] == [[1]] and len(cb.calls) == 1
    ledger.actor_died("actor-1", died)  # seen again (the trial's error at its end): no second call
    assert len(cb.exceptions) == 1
    assert [ledger.worker_started(rank, f"again-{rank}") for rank in (0, 1)] == [1, 1]
    ledger.actor_died("actor-0", died)  # a worker of the attempt that is over
    assert len(cb.exceptions) == 1
    ledger.worker_done(0, None, [], attempt=1)
    ledger.actor_died("the-trainer", died)  # not a worker: every rank still running
    assert [list(e) for e in cb.exceptions] == [[1], [1]]
    assert isinstance(cb.exceptions[1][1], RuntimeError)


def test_validations_run_one_at_a_time_with_kwargs_and_timeouts() -> None:
    from compat import ValidationConfig, ValidationTaskConfig

    seen = []

    def runner(fn, checkpoint, kwargs, remote_kwargs, timeout_s):
        seen.append((checkpoint, kwargs, remote_kwargs, timeout_s))
        return ValidationOutcome(CheckpointStatus.VALIDATED, fn(checkpoint, **kwargs))

    ledger = RunLedger(1, validation_runner=runner)
    user = ValidationConfig(
        fn=lambda ckpt, scale=1: {"score": scale},
        task_config=ValidationTaskConfig(fn_kwargs={"scale": 2}, timeout_s=9),
        ray_remote_kwargs={"num_cpus": 0},
    )
    ledger.use_validation_config(trainer_config(user))
    ledger.record(rec(0, 0, ckpt="A", loss=1), ("A", True))
    ledger.record(rec(0, 1, ckpt="B", loss=1), ("B", ValidationTaskConfig(fn_kwargs={"scale": 5}, timeout_s=1)))
    snap = ledger.close()
    assert seen == [("A", {"scale": 2}, {"num_cpus": 0}, 9), ("B", {"scale": 5}, {"num_cpus": 0}, 1)]
    assert snap.validations[(0, 0)].metrics == {"score": 2} and snap.validations[(0, 1)].metrics == {"score": 5}
    assert [r.validation.status for r in snap.rounds()] == [CheckpointStatus.VALIDATED] * 2


def rec_at(attempt, rank, index, ckpt=None, **metrics):
    record = rec(rank, index, ckpt, **metrics)
    record.attempt = attempt
    return record


def test_every_round_of_every_attempt_reaches_after_report_in_order_with_one_after_exception_per_failure() -> None:
    cb = Recorder()
    ledger = RunLedger(2, callbacks=[cb])
    boom = RuntimeError("worker 1 died")
    ledger.record(rec_at(0, 0, 0, a=1))
    ledger.record(rec_at(0, 1, 0, a=2))
    ledger.record(rec_at(0, 0, 1, a=3))  # rank 1 never reports round 1 of attempt 0
    ledger.worker_done(1, None, [], boom, attempt=0)
    # The retried attempt starts again at index 0; its records arrive out of order.
    ledger.record(rec_at(1, 1, 1, a=12))
    ledger.record(rec_at(1, 0, 1, a=11))
    ledger.record(rec_at(1, 0, 0, a=9))
    ledger.record(rec_at(1, 1, 0, a=10))
    snap = ledger.close()
    assert [m for m, _ in cb.calls] == [[{"a": 1}, {"a": 2}], [{"a": 9}, {"a": 10}], [{"a": 11}, {"a": 12}]]
    assert cb.exceptions == [{1: boom}]
    assert [(r.attempt, r.index) for r in snap.rounds()] == [(0, 0), (1, 0), (1, 1)]
    assert snap.failures == [{1: boom}] and snap.attempts == 1  # worker_started was not called here
    assert len(snap.records) == 7  # the dead attempt's half round is kept


def test_after_exception_comes_after_the_failed_attempts_complete_rounds() -> None:
    order = []

    class Log(UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            order.append(("report", metrics[0]["a"]))

        def after_exception(self, run_context, worker_exceptions):
            order.append(("exception", sorted(worker_exceptions)))

    ledger = RunLedger(1, callbacks=[Log()])
    ledger.record(rec_at(0, 0, 0, a=1))
    ledger.worker_done(0, None, [], ValueError("x"), attempt=0)
    ledger.worker_done(0, None, [], ValueError("again"), attempt=0)  # one failure, one call
    ledger.record(rec_at(1, 0, 0, a=2))
    ledger.close()
    assert order == [("report", 1), ("exception", [0]), ("report", 2)]


def test_an_attempt_the_engine_retried_without_a_word_reaches_after_exception_before_the_next() -> None:
    """An engine may start attempt N+1 without ever saying why attempt N ended (Ray 2.60's
    Tune, when a running trial's actor died before its task's error came: docs §21): the
    ranks of attempt N that neither finished nor reported an error are its failure."""
    from compat.errors import WorkerLostError

    order = []

    class Log(UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            order.append(("report", [m["a"] for m in metrics]))

        def after_exception(self, run_context, worker_exceptions):
            order.append(("exception", worker_exceptions))

    ledger = RunLedger(3, callbacks=[Log()])
    assert [ledger.worker_started(rank, f"actor-{rank}") for rank in (0, 1, 2)] == [0, 0, 0]
    for rank in (0, 1, 2):
        record = rec_at(0, rank, 0, a=rank)
        record.pid, record.hostname = 100 + rank, "node-b"
        ledger.record(record)
    ledger.record(rec_at(0, 0, 1, a=9))  # rank 0's second report: its round never completes
    ledger.worker_done(2, None, [], attempt=0)  # rank 2 returned; ranks 0 and 1 just stop
    assert ledger.worker_started(1, "again-1") == 1
    ((kind, errors),) = [entry for entry in order if entry[0] == "exception"]
    assert order[0] == ("report", [0, 1, 2]) and order[1][0] == "exception"
    assert sorted(errors) == [0, 1]  # not rank 2, which finished
    assert all(isinstance(e, WorkerLostError) for e in errors.values())
    message = str(errors[1])
    assert "rank 1" in message and "attempt 0" in message and "pid 101 on node-b" in message
    assert "§21" in message
    assert [ledger.worker_started(rank, f"again-{rank}") for rank in (0, 2)] == [1, 1]
    ledger.record(rec_at(1, 0, 0, a=10))
    ledger.record(rec_at(1, 1, 0, a=11))
    ledger.record(rec_at(1, 2, 0, a=12))
    snap = ledger.close()
    assert [entry[0] for entry in order] == ["report", "exception", "report"]  # one call per failure
    assert snap.failures == [errors] and snap.attempts == 2


def test_an_attempt_whose_failure_was_reported_is_not_reported_again_when_the_next_starts() -> None:
    cb = Recorder()
    ledger = RunLedger(2, callbacks=[cb])
    boom = RuntimeError("boom")
    assert [ledger.worker_started(rank) for rank in (0, 1)] == [0, 0]
    ledger.worker_done(1, None, [], boom, attempt=0)  # rank 0 never finishes: the engine stops it
    assert [ledger.worker_started(rank) for rank in (0, 1)] == [1, 1]
    ledger.close()
    assert cb.exceptions == [{1: boom}]


def test_attempt_numbers_count_restarts_per_rank() -> None:
    ledger = RunLedger(2)
    assert [ledger.worker_started(0), ledger.worker_started(1)] == [0, 0]
    assert [ledger.worker_started(1), ledger.worker_started(0)] == [1, 1]
    assert ledger.close().attempts == 2


def test_an_elastic_runs_attempts_are_its_worker_groups_each_complete_at_its_own_size() -> None:
    """V2's engine resizes an elastic run by starting a worker group of another size: an
    attempt is a group (its id from the workers, whichever rank starts first), its rounds are
    complete with its own ranks, and a resize (no failure) calls no after_exception, as raw
    V2's controller calls none."""
    cb = Recorder()
    ledger = RunLedger(2, callbacks=[cb], vote_timeout_s=5)
    assert ledger.worker_started(0, "a0", "group-a", 1) == 0
    assert ledger.vote_free_round(0, 0, 0, True, True) is True  # the only rank: free at once
    ledger.record(rec_at(0, 0, 0, step=0))
    ledger.record(rec_at(0, 0, 1, step=1))
    # The cluster grew: a group of 2, rank 1 asking first; the other group's rank 0 again.
    assert [ledger.worker_started(1, "b1", "group-b", 2), ledger.worker_started(0, "b0", "group-b", 2)] == [1, 1]
    assert ledger.worker_started(0, "b0", "group-b", 2) == 1  # asked again (a restarted host): the same
    ledger.record(rec_at(1, 0, 0, step=2))
    assert delivered(ledger, 2) == 2  # attempt 1's round waits for its second rank
    ledger.record(rec_at(1, 1, 0, step=2))
    ledger.record(rec_at(1, 0, 1, step=3))  # the node of rank 1 goes away before it reports again
    lost = ConnectionError("the node went away")
    ledger.engine_failed({1: lost})
    assert ledger.worker_started(0, "c0", "group-c", 1) == 2
    ledger.record(rec_at(2, 0, 0, step=3))
    snap = ledger.close()
    assert [[m["step"] for m in metrics] for metrics, _ in cb.calls] == [[0], [1], [2, 2], [3]]
    assert cb.exceptions == [{1: lost}]  # the failure, not the resize
    assert [(r.attempt, r.index, len(r.reports)) for r in snap.rounds()] == [(0, 0, 1), (0, 1, 1), (1, 0, 2), (2, 0, 1)]
    assert (snap.attempts, snap.world_sizes, snap.digest.complete_rounds) == (3, {0: 1, 2: 1}, 4)


def test_usages_travel_with_each_record_so_a_crashed_worker_keeps_them() -> None:
    ledger = RunLedger(1)
    record = rec(0, 0, a=1)
    record.usages = [Usage("free-floating-report", 1, "job.py:7")]
    ledger.record(record)  # and the worker dies: no worker_done
    assert [(u.kind, u.first_site) for u in ledger.close().usages] == [("free-floating-report", "job.py:7")]


def test_round_sink_sees_complete_rounds_in_order_and_its_failure_is_reported() -> None:
    seen = []

    def sink(round_):
        seen.append(round_.rank0.metrics["a"])
        if len(seen) == 2:
            raise OSError("disk full")

    ledger = RunLedger(1, round_sink=sink)
    for i in (1, 0, 2):
        ledger.record(rec(0, i, a=i))
    snap = ledger.close()
    assert seen == [0, 1, 2]
    assert [f.hook for f in snap.callback_failures] == ["__call__"]


def test_worker_done_waits_for_records_still_on_their_way() -> None:
    import threading
    import time

    order = []

    class Log(UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            order.append("report")

        def after_exception(self, run_context, worker_exceptions):
            order.append("exception")

    ledger = RunLedger(1, callbacks=[Log()])
    # The actor's thread pool ran worker_done before the record sent just before it.
    done = threading.Thread(target=ledger.worker_done, args=(0, None, [], ValueError("x"), 0, 1))
    done.start()
    time.sleep(0.2)
    ledger.record(rec(0, 0, a=1))
    done.join()
    assert order == ["report", "exception"]


def test_a_failure_waits_for_the_other_ranks_records_of_the_rounds_it_completed() -> None:
    # Rank 1 sent two rounds and failed; rank 0's record of the second round comes seconds
    # later (CI's loaded machine). after_exception follows that round, as under raw V2.
    import threading
    import time

    order = []

    class Log(UserCallback):
        def after_report(self, run_context, metrics, checkpoint):
            order.append(metrics[0]["step"])

        def after_exception(self, run_context, worker_exceptions):
            order.append("exception")

    ledger = RunLedger(2, callbacks=[Log()])
    for rank in (0, 1):
        ledger.record(rec(rank, 0, step=0))
    ledger.record(rec(1, 1, step=1))
    failed = threading.Thread(target=ledger.worker_done, args=(1, None, [], RuntimeError("x"), 0, 2))
    failed.start()
    time.sleep(2.5)  # longer than the fixed grace the ledger used to give
    ledger.record(rec(0, 1, step=1))
    failed.join()
    assert order == [0, 1, "exception"]


def test_a_failure_stops_waiting_when_the_rank_that_owes_a_record_finishes() -> None:
    import threading

    ledger = RunLedger(2, callbacks=[Recorder()])
    ledger.record(rec(1, 0, step=0))
    failed = threading.Thread(target=ledger.worker_done, args=(1, None, [], RuntimeError("x"), 0, 1))
    failed.start()
    ledger.worker_done(0, None, [], RuntimeError("died before reporting"), 0, 0)
    failed.join(timeout=5)
    assert not failed.is_alive()  # not the 30 s arrival timeout
    [failures] = ledger.close().failures
    assert sorted(failures) == [0, 1]


# -- retention, as get_all_reported_checkpoints sees it under v1 -----------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from compat_core.semantics.rounds import Retention, retained  # noqa: E402

pytestmark = pytest.mark.one_pass  # plain code, no Ray: the same in either setting (CI's first pass)

_scores = st.one_of(st.none(), st.integers(-3, 3).map(float), st.just(float("nan")))


@settings(max_examples=300, deadline=None)
@given(
    scores=st.lists(_scores, min_size=0, max_size=8),
    num_to_keep=st.one_of(st.none(), st.integers(1, 4)),
    attribute=st.sampled_from([None, "loss"]),
    order=st.sampled_from(["max", "min"]),
)
def test_retention_keeps_what_rays_v1_checkpoint_manager_keeps(tmp_path_factory, scores, num_to_keep, attribute, order):
    """Ray's own V1 checkpoint manager, on real checkpoint directories, is the oracle."""
    from ray.air.config import CheckpointConfig
    from ray.train import Checkpoint
    from ray.train._internal.checkpoint_manager import _CheckpointManager, _TrainingResult

    root = tmp_path_factory.mktemp("ckpts")
    metrics = [{} if s is None else {"loss": s} for s in scores]
    manager = _CheckpointManager(CheckpointConfig(num_to_keep, attribute, order))
    for position, values in enumerate(metrics):
        directory = root / str(position)
        directory.mkdir()
        manager.register_checkpoint(_TrainingResult(Checkpoint.from_directory(str(directory)), values))
    surviving = sorted(int(p.name) for p in root.iterdir())
    retention = Retention(num_to_keep, attribute, order, facts.UNSCORED_CHECKPOINTS_NEWEST)
    assert retained(metrics, retention) == surviving


@pytest.mark.parametrize(
    ("unscored_as_newest", "kept"),
    [(True, [1]), (False, [0, 1])],  # Ray 2.49 and later; Ray 2.44-2.48
)
def test_a_checkpoint_without_the_score_attribute_ranks_as_the_installed_ray_ranks_it(unscored_as_newest, kept):
    # The second report lacks "loss": appended as the newest, it is the one kept; ranked by
    # -inf, it is the worst but the latest (always kept), and the first survives as the best.
    retention = Retention(1, "loss", "max", unscored_as_newest)
    assert retained([{"loss": 0.0}, {}], retention) == kept


SWITCH_CASES = [
    # (the task's value, the cluster workers' value, the user's remote kwargs, expected env_vars or None: unchanged)
    ("0", "1", {}, {"RAY_TRAIN_V2_ENABLED": "0"}),
    ("1", "0", {"num_cpus": 0}, {"RAY_TRAIN_V2_ENABLED": "1"}),
    ("0", "false", {}, None),  # Ray reads both as V1: no second pool of workers
    ("1", "TRUE", {}, None),
    ("0", "yes", {}, {"RAY_TRAIN_V2_ENABLED": "0"}),  # a value Ray would misread is overridden
    ("0", "1", {"runtime_env": {"env_vars": {"A": "b"}, "pip": ["x"]}}, {"A": "b", "RAY_TRAIN_V2_ENABLED": "0"}),
    # the user's own value wins
    ("0", "1", {"runtime_env": {"env_vars": {"RAY_TRAIN_V2_ENABLED": "1"}}}, {"RAY_TRAIN_V2_ENABLED": "1"}),
    (None, "1", {}, None),
]


@pytest.mark.parametrize(("value", "workers", "remote_kwargs", "env_vars"), SWITCH_CASES)
def test_a_validation_task_reads_the_backends_switch_whatever_the_cluster_started_with(
    value, workers, remote_kwargs, env_vars
) -> None:
    options = task_options(remote_kwargs, value, workers)
    if env_vars is None:
        assert options is remote_kwargs
        return
    assert options["runtime_env"]["env_vars"] == env_vars
    assert {k: v for k, v in options.items() if k != "runtime_env"} == {
        k: v for k, v in remote_kwargs.items() if k != "runtime_env"
    }
    assert {k: v for k, v in options["runtime_env"].items() if k != "env_vars"} == {
        k: v for k, v in remote_kwargs.get("runtime_env", {}).items() if k != "env_vars"
    }


def test_an_unset_cluster_switch_reads_as_the_installed_rays_default() -> None:
    default = "1" if facts.V2_IS_DEFAULT else "0"
    assert task_options({}, default, None) == {}
    other = "0" if default == "1" else "1"
    assert task_options({}, other, None) == {"runtime_env": {"env_vars": {"RAY_TRAIN_V2_ENABLED": other}}}


@pytest.mark.parametrize(
    ("selected", "has_v1_engine", "value"), [("v1", True, "0"), ("v2", True, "1"), ("v1", False, "1")]
)
def test_validation_runs_with_the_backends_ray_functions_while_ray_ships_them(
    monkeypatch, selected, has_v1_engine, value
) -> None:
    monkeypatch.setattr(adapters, "has_v1_engine", lambda: has_v1_engine)
    mode = switch.mode_of(switch.Generation(selected))
    assert mode.outside_training_env == {switch.ENV_VAR: value}


def test_ray_2_50s_device_failure_in_a_validation_says_how_to_get_past_it() -> None:
    error = "RuntimeError: TrainFnUtils has not been initialized. ..."
    hinted = messages.validation_failed(error, device_needs_worker=True)
    assert hinted.startswith(error) and "iter_torch_batches(device='cpu')" in hinted and "2.51" in hinted
    assert messages.validation_failed(error, device_needs_worker=False) == error
    assert messages.validation_failed("ValueError: bad", device_needs_worker=True) == "ValueError: bad"


def test_callback_failures_from_the_ledger_and_from_the_driver_are_one_log_in_order() -> None:
    """A failing ``after_report`` (run in the ledger) and a Tune callback failing on the
    driver (``callback_failed``) both reach the result, in the order they happened."""
    from compat_core.semantics.records import CallbackFailure

    class Failing:
        def after_report(self, *args):
            raise ValueError("tracker down")

    ledger = RunLedger(1, callbacks=[Failing()])
    ledger.record(Record(0, 0, {"step": 0}, False, False, 0.0))
    assert delivered(ledger, 1) == 1
    ledger.callback_failed(CallbackFailure("MLflowLoggerCallback", "on_trial_result", 0, "E: x", ""))
    ledger.record(Record(0, 1, {"step": 1}, False, False, 0.0))
    failures = ledger.close().callback_failures
    assert [(f.callback, f.round_index) for f in failures] == [
        ("Failing", 0),
        ("MLflowLoggerCallback", 0),
        ("Failing", 1),
    ]


def test_the_drivers_last_poll_gets_every_complete_round_while_a_slow_sink_holds_the_delivery() -> None:
    """Rounds reach the sink and callbacks on the ledger's delivery thread; when the engine
    is done, the driver's last poll (``flush=True``) must still get every round that is
    complete, however slow the first round's sink was (V1's live logs import tensorboardX:
    a second; a Tune trial's results all went missing when its run was shorter)."""
    import threading

    slow = threading.Event()

    def sink(round_):
        slow.wait(timeout=0.5)

    ledger = RunLedger(1, round_sink=sink, consumers=("tune",))
    for index in range(3):
        ledger.record(rec(0, index, a=index))
    assert len(ledger.delivered_since("tune", 0)) < 3  # the sink is still busy with round 0
    assert [r.rank0.metrics["a"] for r in ledger.delivered_since("tune", 0, flush=True)] == [0, 1, 2]
    ledger.close()


def test_the_client_calls_only_the_ledgers_own_methods_by_their_names() -> None:
    """Every call a run makes is a method of :class:`LedgerClient`, which names the
    :class:`RunLedger` method it calls; the host refuses what is not one."""
    import inspect
    import re

    from compat_core.run.ledger import LedgerClient
    from compat_core.run.ledger.host import LedgerHost

    sent = set(re.findall(r"RunLedger\.(\w+)", inspect.getsource(LedgerClient)))
    assert sent and all(callable(getattr(RunLedger, name)) and not name.startswith("_") for name in sent)
    assert not hasattr(LedgerClient, "__getattr__")
    host = LedgerHost()
    asyncio.run(host.open_run("run", 1, {}))
    assert asyncio.run(host.call("run", "next_checkpoint_index", 0)) == 0
    for wrong in ("_end_unexplained", "no_such_call"):
        with pytest.raises(AttributeError, match="RunLedger has no call"):
            asyncio.run(host.call("run", wrong, 0))
    asyncio.run(host.close_run("run"))


def test_a_consumer_is_fed_each_round_as_it_is_delivered_not_on_a_timer() -> None:
    """What feeds Ray Tune on the driver: a call that waits in the ledger returns as soon as a
    round is delivered (not when its wait runs out), and at once when the run's end wakes it."""
    import threading

    ledger = RunLedger(1, consumers=("tune",))
    fed: dict[str, list] = {}
    waiting = threading.Thread(target=lambda: fed.update(first=ledger.delivered_since("tune", 0, False, 60.0)))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive()  # nothing delivered yet: it waits
    ledger.record(rec(0, 0, a=1))
    waiting.join(10)
    assert not waiting.is_alive() and [r.rank0.metrics for r in fed["first"]] == [{"a": 1}]
    woken = threading.Thread(target=lambda: fed.update(second=ledger.delivered_since("tune", 1, False, 60.0)))
    woken.start()
    for _ in range(50):  # until it waits, then is woken
        ledger.wake_consumers()  # the run's engine ended
        woken.join(0.2)
        if not woken.is_alive():
            break
    assert not woken.is_alive() and fed["second"] == []
    ledger.record(rec(0, 1, a=2))
    delivered(ledger, 2)
    assert [r.rank0.metrics for r in ledger.delivered_since("tune", 1)] == [{"a": 2}]  # without a wait: at once


def test_delivered_rounds_stay_only_until_every_consumer_named_has_read_them() -> None:
    """Memory that does not grow with the run: the ledger keeps a delivered round for the
    driver's consumers (Tune's forwarding, Tune callbacks) until each has read it, and keeps
    none when the run has no consumer; a consumer it was not told of is an error."""
    quiet = RunLedger(1)
    for index in range(100):
        quiet.record(rec(0, index, a=index))
    assert delivered(quiet, 100) == 100 and quiet._delivery.delivered._items == []
    with pytest.raises(ValueError, match="no consumer 'tune' was named when the run opened"):
        quiet.delivered_since("tune", 0)
    ledger = RunLedger(1, consumers=("tune", "tune_callbacks"))
    for index in range(10):
        ledger.record(rec(0, index, a=index))
    delivered(ledger, 10)
    assert len(ledger.delivered_since("tune", 0)) == 10
    assert len(ledger.delivered_since("tune", 8)) == 2  # "tune" read 8: "tune_callbacks" has read none
    assert len(ledger._delivery.delivered._items) == 10
    assert [r.rank0.metrics["a"] for r in ledger.delivered_since("tune_callbacks", 6)] == [6, 7, 8, 9]
    assert len(ledger._delivery.delivered._items) == 4  # rounds 6-9: read by one consumer, not the other
    assert [r.rank0.metrics["a"] for r in ledger.delivered_since("tune", 10)] == []
    assert len(ledger._delivery.delivered._items) == 4
    ledger.delivered_since("tune_callbacks", 10)
    assert ledger._delivery.delivered._items == []
    ledger.close()


def test_a_rounds_v1_row_is_made_once_by_the_ledger_for_the_sink_and_every_consumer() -> None:
    """One maker of V1's rows per run, in the ledger: the live logs (the round sink) and Ray
    Tune's callbacks on the driver (a consumer) get the same row, made once per round, and a
    consumer reads the rows the sink wrote, numbered as they were."""
    from compat_core.semantics.v1_logs import V1Rows

    class CountingRows(V1Rows):
        made = 0

        def round_row(self, round_):
            CountingRows.made += 1
            return super().round_row(round_)

    written = []
    ledger = RunLedger(
        2,
        round_sink=lambda round_: written.append(round_.row),
        rows=CountingRows(start_time=1.8e9 - 1, config={}, trial_id="t"),
        consumers=("tune_callbacks",),
    )
    for index in range(5):
        for rank in (1, 0):
            ledger.record(Record(rank, index, {"a": index, "rank": rank}, False, False, 1.8e9 + index))
    fed = ledger.delivered_since("tune_callbacks", 0, flush=True)
    ledger.close()
    assert CountingRows.made == 5  # one row per round, not one per reader
    assert [r.row for r in fed] == written
    assert [(row["a"], row["rank"], row["training_iteration"]) for row in written] == [(i, 0, i + 1) for i in range(5)]


def test_without_a_maker_of_rows_a_round_carries_none_and_the_live_logs_say_what_is_missing(tmp_path) -> None:
    from compat_core.semantics import v1_logs

    ledger = RunLedger(1, round_sink=v1_logs.LiveV1Logs(v1_logs.storage_of(tmp_path)), consumers=("tune",))
    ledger.record(rec(0, 0, a=1))
    assert [r.row for r in ledger.delivered_since("tune", 0, flush=True)] == [None]
    failures = ledger.close().callback_failures
    assert [f.hook for f in failures] == ["__call__"] and "rows=V1Rows" in failures[0].error
