"""The v2 free-round vote as plain code: one decision per round, given to every rank whatever
order they arrive in and however late (a rank slower than the vote's timeout included)."""

from __future__ import annotations

import threading
import time

import pytest

from compat_core.run.ledger.votes import FreeRoundVote

ROUND = (0, 7)  # (attempt, report index)


def _vote_on_a_thread(vote: FreeRoundVote, rank: int, free: bool) -> dict[str, bool]:
    answer: dict[str, bool] = {}
    thread = threading.Thread(target=lambda: answer.update(decision=vote.vote(ROUND, rank, free, free)))
    thread.start()
    answer["thread"] = thread  # type: ignore[assignment]
    return answer


def test_every_rank_free_makes_the_round_free_for_all() -> None:
    vote = FreeRoundVote(world_size=2, timeout_s=5)
    first = _vote_on_a_thread(vote, 0, True)
    assert vote.vote(ROUND, 1, True, True) is True
    first["thread"].join()
    assert first["decision"] is True
    assert vote.pending() == 0  # every rank answered: nothing of the round is kept


@pytest.mark.parametrize("first_rank", [0, 1])
def test_one_checkpoint_sends_the_round_through_ray_for_every_rank(first_rank: int) -> None:
    vote = FreeRoundVote(world_size=2, timeout_s=5)
    waiting = _vote_on_a_thread(vote, first_rank, True)
    assert vote.vote(ROUND, 1 - first_rank, False, False) is False  # this rank's report has a checkpoint
    waiting["thread"].join(timeout=2)
    assert waiting["decision"] is False  # told at once, not after the timeout
    assert vote.pending() == 0


@pytest.mark.parametrize("slow_rank", [0, 1])
def test_a_rank_slower_than_the_timeout_gets_the_decision_the_others_got(slow_rank: int) -> None:
    """The first rank waits out the timeout and goes through Ray's report (a barrier); the slow
    rank, voting "free" afterwards, must go through Ray too, not skip the barrier the first rank
    is in (each rank deciding for itself gave it "free": every vote was in by then)."""
    vote = FreeRoundVote(world_size=2, timeout_s=0.2)
    started = time.monotonic()
    assert vote.vote(ROUND, 1 - slow_rank, True, True) is False  # waited 0.2 s: through Ray
    assert time.monotonic() - started >= 0.2
    assert vote.vote(ROUND, slow_rank, True, True) is False  # late, and told the same
    assert vote.pending() == 0


def test_rounds_are_decided_each_on_its_own_and_kept_only_until_answered() -> None:
    vote = FreeRoundVote(world_size=3, timeout_s=5)

    def round_(index: int) -> list[bool]:
        answers: list[bool] = []

        def rank_votes(rank: int) -> None:  # rank 2 passes a checkpoint in odd rounds
            free = index % 2 == 0 or rank != 2
            answers.append(vote.vote((0, index), rank, free, free))

        threads = [threading.Thread(target=rank_votes, args=(rank,)) for rank in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return answers

    for index in range(100):
        assert round_(index) == [index % 2 == 0] * 3
    assert vote.pending() == 0


def _one_rank_slower_than_the_vote(config) -> None:
    import compat as train

    rank = train.get_context().get_world_rank()
    for step in range(3):
        if step == 1 and rank == config["slow_rank"]:
            time.sleep(config["delay_s"])  # evaluating alone, longer than the others wait
        train.report({"step": step, "rank": rank})


@pytest.mark.ray
@pytest.mark.one_pass  # v2: the same in CI's second pass
@pytest.mark.parametrize("slow_rank", [0, 1])
@pytest.mark.extended_cases("0")  # CI: a slow rank that is not the first
def test_on_real_ray_a_rank_slower_than_the_vote_keeps_every_round_in_step(
    slow_rank, v2, storage, monkeypatch, tmp_path
) -> None:
    """Two workers report three rounds without a checkpoint; one of them reaches round 1 after
    the other has waited out the vote (0.5 s here): that round goes through Ray for both, the
    run completes, every report is kept once and after_report sees every round in order."""
    import compat as train
    from compat import DataParallelTrainer
    from tests.compat.calls import CallLog, calls

    monkeypatch.setenv("COMPAT_VOTE_TIMEOUT_S", "0.5")
    log = tmp_path / "calls.jsonl"
    result = DataParallelTrainer(
        _one_rank_slower_than_the_vote,
        train_loop_config={"slow_rank": slow_rank, "delay_s": 2.0},
        scaling_config=train.ScalingConfig(num_workers=2),
        run_config=train.RunConfig(storage_path=storage, callbacks=[CallLog(str(log))]),
    ).fit()
    frame = result.worker_metrics_dataframe
    assert sorted(zip(frame["step"], frame["rank"], strict=True)) == [(s, r) for s in range(3) for r in range(2)]
    assert calls(log) == [["report", 0], ["report", 1], ["report", 2]]


def test_a_bad_vote_timeout_is_an_error_naming_the_variable(monkeypatch) -> None:
    from compat_core.run.ledger import votes

    monkeypatch.setenv("COMPAT_VOTE_TIMEOUT_S", "soon")
    with pytest.raises(ValueError, match=r"COMPAT_VOTE_TIMEOUT_S='soon': give a number of seconds > 0"):
        votes.vote_timeout_s()
    monkeypatch.setenv("COMPAT_VOTE_TIMEOUT_S", "2.5")
    assert votes.vote_timeout_s() == 2.5


class _Pushes:
    """What :class:`FreeRoundVote` pushes: (rank, round, free) in order; ranks in ``gone`` cannot
    be written to (their answer connection broke)."""

    def __init__(self, gone: frozenset[int] = frozenset()) -> None:
        self.sent: list[tuple[int, tuple[int, int], bool]] = []
        self.gone = gone

    def __call__(self, rank: int, key: tuple[int, int], free: bool) -> bool:
        if rank in self.gone:
            return False
        self.sent.append((rank, key, free))
        return True


def test_pushed_ranks_are_each_sent_the_decision_once_when_the_round_is_decided() -> None:
    pushes = _Pushes()
    vote = FreeRoundVote(world_size=3, timeout_s=5, push=pushes)
    vote.vote_pushed(ROUND, 2, True)
    vote.vote_pushed(ROUND, 0, True)
    assert pushes.sent == []  # undecided: nobody is told anything, nothing waits in a call
    vote.vote_pushed(ROUND, 1, True)
    assert sorted(pushes.sent) == [(rank, ROUND, True) for rank in range(3)]
    assert vote.pending() == 0  # every rank has its answer: the round is gone


def test_a_checkpoint_decides_at_once_and_a_late_pushed_rank_is_told_when_it_votes() -> None:
    pushes = _Pushes()
    vote = FreeRoundVote(world_size=3, timeout_s=5, push=pushes)
    vote.vote_pushed(ROUND, 0, True)
    vote.vote_pushed(ROUND, 1, False)  # rank 1 passes a checkpoint: it goes on, told nothing
    assert pushes.sent == [(0, ROUND, False)]
    vote.vote_pushed(ROUND, 2, True)
    assert pushes.sent == [(0, ROUND, False), (2, ROUND, False)]
    assert vote.pending() == 0


def test_a_pushed_rank_that_hears_nothing_settles_the_round_for_everyone() -> None:
    """Rank 1 never votes (slow or dead): rank 0, after its timeout, asks; the round is not
    free, and rank 2, pushed that decision, and the late rank 1 get the same."""
    pushes = _Pushes()
    vote = FreeRoundVote(world_size=3, timeout_s=5, push=pushes)
    vote.vote_pushed(ROUND, 0, True)
    vote.vote_pushed(ROUND, 2, True)
    assert vote.settle(ROUND, 0) is False
    assert pushes.sent == [(2, ROUND, False)]  # rank 0 has its answer from the call
    vote.vote_pushed(ROUND, 1, True)
    assert pushes.sent[-1] == (1, ROUND, False)
    assert vote.pending() == 0


def test_a_rank_whose_pushed_answer_was_lost_asks_and_gets_the_same_decision() -> None:
    """The decision was pushed to every rank (the round left memory), but rank 1's connection
    broke before it read it: asking by an actor call, or settling, it is given what the others
    acted on, not a new vote that would wait for them."""
    pushes = _Pushes()
    vote = FreeRoundVote(world_size=2, timeout_s=0.2, push=pushes)
    vote.vote_pushed(ROUND, 0, True)
    vote.vote_pushed(ROUND, 1, True)
    assert vote.pending() == 0
    started = time.monotonic()
    assert vote.vote(ROUND, 1, True, True) is True
    assert vote.settle(ROUND, 1) is True
    assert time.monotonic() - started < 0.2  # at once, not after the timeout
    assert vote.pending() == 0


def test_a_rank_that_cannot_be_pushed_to_stays_unanswered_until_it_asks() -> None:
    pushes = _Pushes(gone=frozenset({1}))
    vote = FreeRoundVote(world_size=2, timeout_s=5, push=pushes)
    vote.vote_pushed(ROUND, 0, True)
    vote.vote_pushed(ROUND, 1, True)
    assert pushes.sent == [(0, ROUND, True)]
    assert vote.pending() == 1  # rank 1's answer is owed
    assert vote.settle(ROUND, 1) is True  # it asks (its connection broke): the round's decision
    assert vote.pending() == 0
