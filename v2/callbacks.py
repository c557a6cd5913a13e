"""Wraps a user's callback for V2's controller so a failing callback cannot end the run."""

from __future__ import annotations

import traceback
from typing import Any

from ray.train.v2.api.callback import UserCallback


class GuardedCallback(UserCallback):
    """Calls the user's callback; reports an exception to the ledger instead of raising."""

    def __init__(self, user: Any, ledger: Any) -> None:
        self.user = user
        self.ledger = ledger
        self.rounds = 0

    def after_report(self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Any | None) -> None:
        index = self.rounds
        self.rounds += 1
        self._guard("after_report", index, run_context, metrics, checkpoint)

    def after_exception(self, run_context: Any, worker_exceptions: dict[int, Exception]) -> None:
        self._guard("after_exception", None, run_context, worker_exceptions)

    def _guard(self, hook: str, index: int | None, *args: Any) -> None:
        from compat._ledger import CallbackFailure

        try:
            getattr(self.user, hook)(*args)
        except Exception as exc:
            failure = CallbackFailure(
                type(self.user).__name__, hook, index, f"{type(exc).__name__}: {exc}", traceback.format_exc()
            )
            self.ledger.callback_failed.remote(failure)
