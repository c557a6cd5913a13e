"""Ray Tune callbacks under v2: fed on the driver, as V1's Tune loop feeds them.

Raw V2 rejects ``RunConfig(callbacks=[<tune.Callback>])``, so experiment tracking (MLflow,
W&B, Ray's CSV/JSON/TBX loggers, a custom ``on_trial_result``) silently ends the day a team
flips. compat keeps them: a driver thread is fed complete rounds by the run ledger (a call
that waits in the ledger for the next round) and calls each callback with one Tune
``Trial`` standing for the run and rank 0's result with V1's auto-filled keys: the row the
ledger made for the round (the V1 logs' row, when they are kept). Files the logger callbacks
write go
to the trial's driver staging directory, as under V1, and are copied into the run
directory, through its filesystem, when the run ends.
"""

from __future__ import annotations

import contextlib
import os
import threading
import traceback
from typing import Any

from compat_core.files.storage import RunStorage
from compat_core.releases import adapters
from compat_core.run.ledger import LedgerClient
from compat_core.semantics.records import CallbackFailure

# The longest the callbacks' thread waits in the ledger for the next round (the run's end wakes
# it); after an error from the ledger, how long it waits before asking again.
WAIT_S = 1.0


class TuneCallbacks:
    """Drives Ray Tune callbacks from the run ledger for one v2 ``fit()``."""

    CONSUMER = "tune_callbacks"  # what it is called as a reader of the ledger's delivered rounds

    def __init__(
        self, callbacks: list[Any], ledger: LedgerClient, storage: RunStorage, trial_id: str, config: dict[str, Any]
    ):
        self.callbacks = callbacks
        self.ledger = ledger
        self.storage = storage
        self.trial_id = trial_id
        self.config = config
        self.failures: list[CallbackFailure] = []
        self._seen = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.trial: Any = None

    def start(self) -> None:
        from ray.tune.experiment import Trial

        parent, name = os.path.split(self.storage.run_dir.rstrip("/"))
        context = adapters.v1_storage_context(parent, name, self.storage.filesystem)
        self.trial = Trial("TorchTrainer", stub=True, config=self.config, trial_id=self.trial_id, storage=context)
        os.makedirs(self.trial.local_path, exist_ok=True)
        self.trial.set_status(Trial.RUNNING)
        self._each("setup", stop=None, num_samples=1, total_num_samples=1)
        self._each("on_trial_start", 0, [self.trial], self.trial)
        self._thread = threading.Thread(target=self._poll_loop, name="compat-tune-callbacks", daemon=True)
        self._thread.start()

    def finish(self, failed: bool) -> None:
        from ray.tune.experiment import Trial

        self._stop.set()
        if self._thread is not None:
            with contextlib.suppress(Exception):
                self.ledger.wake_consumers()
            self._thread.join()
        self._poll(flush=True)  # every round completed since the last poll
        self.trial.set_status(Trial.ERROR if failed else Trial.TERMINATED)
        hook = "on_trial_error" if failed else "on_trial_complete"
        self._each(hook, self._seen, [self.trial], self.trial)
        self._each("on_experiment_end", [self.trial])
        self._upload()
        for failure in self.failures:
            self.ledger.send_callback_failure(failure)

    def _poll_loop(self) -> None:
        """Fed by the ledger: each round as it is delivered (no timer)."""
        while not self._stop.is_set():
            if not self._poll(wait_s=WAIT_S):
                self._stop.wait(WAIT_S)

    def _poll(self, flush: bool = False, wait_s: float = 0.0) -> bool:
        try:
            rounds = self.ledger.delivered_since(self.CONSUMER, self._seen, flush, wait_s)
        except Exception:  # the run is ending; finish() asks once more
            return False
        for round_ in rounds:
            assert round_.row is not None, "the run's ledger makes rows for Tune callbacks (V2Engine.round_rows)"
            result = dict(round_.row)  # a callback may change its result
            self.trial.run_metadata.last_result = result
            self._each("on_trial_result", self._seen, [self.trial], self.trial, result)
            self._seen += 1
        return True

    def _each(self, hook: str, *args: Any, **kwargs: Any) -> None:
        for callback in self.callbacks:
            try:
                getattr(callback, hook)(*args, **kwargs)
            except Exception as exc:  # a tracker outage must not take the run down
                self.failures.append(
                    CallbackFailure(
                        type(callback).__name__, hook, None, f"{type(exc).__name__}: {exc}", traceback.format_exc()
                    )
                )

    def _upload(self) -> None:
        """Copy what the callbacks wrote on the driver into the run directory."""
        import pyarrow.fs as pafs

        local = self.trial.local_path
        if not os.path.isdir(local) or not os.listdir(local):
            return
        self.storage.filesystem.create_dir(self.storage.run_dir, recursive=True)
        pafs.copy_files(
            local,
            self.storage.run_dir,
            source_filesystem=pafs.LocalFileSystem(),
            destination_filesystem=self.storage.filesystem,
        )
