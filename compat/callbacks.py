"""``compat.UserCallback``: V2's callback interface, honoured by both backends."""

from __future__ import annotations

from typing import Any

from ray.train import Checkpoint
from ray.train.v2.api.callback import UserCallback as _RayUserCallback


class UserCallback(_RayUserCallback):
    """Subclass and override ``after_report`` / ``after_exception``.

    Both run outside the driver, in compat's run-ledger actor (raw V2 runs them in its
    controller actor), so state kept on the callback object is not visible after ``fit()``:
    write what you need to a file or a tracker. ``after_report`` sees each round's
    pre-validation metrics, one dict per worker in rank order, for every round of every
    attempt; ``after_exception`` is called once per failed attempt. A callback that raises
    does not stop training; ``fit()`` raises :class:`compat.CallbackError` at the end,
    with the full result attached.
    """

    def after_report(self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Checkpoint | None) -> None:
        """Called once per report round with every worker's metrics (rank order)."""

    def after_exception(self, run_context: Any, worker_exceptions: dict[int, Exception]) -> None:
        """Called when workers raised; ``worker_exceptions`` maps world rank to exception."""


def is_user_callback(obj: Any) -> bool:
    return isinstance(obj, _RayUserCallback)
