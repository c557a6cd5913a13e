"""What the ledger answers about checkpoints: ``get_all_reported_checkpoints`` where the
engine cannot answer (V1; V1 semantics on V2's engine; V2 before Ray 2.50)."""

from __future__ import annotations

import time
from typing import Any

from compat_core.run.ledger.store import RecordStore
from compat_core.semantics.records import to_round
from compat_core.semantics.rounds import CheckpointStatus, Retention, checkpoint_status, merge_validation, retained


def reported_checkpoints(
    store: RecordStore,
    retention: Retention,
    attempt: int,
    rank: int,
    sent: int,
    validated: bool,
    timeout_s: float | None,
) -> list[tuple[Any, dict[str, Any], CheckpointStatus]]:
    """Every checkpoint round so far, as ``(checkpoint, metrics, status)`` in report order,
    once the asking worker's ``sent`` rounds are complete and, with ``validated``, once their
    validations finished; only those the engine's checkpoint manager keeps (``retention``)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    store.wait(
        lambda: store.count_locked(attempt, rank) >= sent and store.rounds_complete_locked(attempt, sent), left()
    )
    complete = store.checkpoint_rounds()
    rounds = [to_round(key, ranks) for key, ranks in sorted(complete.items())]
    wanted = [(r.attempt, r.index) for r in rounds if r.has_checkpoint and r.wants_validation]
    if validated:
        store.wait(lambda: store.validated_locked(wanted), left())
    validations = store.validations()
    found = []
    for round_ in rounds:
        if not round_.has_checkpoint:
            continue
        key = (round_.attempt, round_.index)
        outcome = validations.get(key)
        status = outcome.status if outcome is not None else checkpoint_status(round_)
        ranks = complete[key]
        checkpoint = next((ranks[i].checkpoint for i in sorted(ranks) if ranks[i].checkpoint is not None), None)
        if checkpoint is None:
            continue  # not persisted (yet)
        found.append((checkpoint, merge_validation(round_.rank0_metrics, outcome), status))
    # Those V1's checkpoint manager keeps (it deletes the others on its own schedule).
    return [found[i] for i in retained([m for _, m, _ in found], retention)]
