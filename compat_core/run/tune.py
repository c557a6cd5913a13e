"""``tune.Tuner(compat_trainer, param_space=...)`` under both settings.

V1 teams run hyperparameter search by passing a Trainer to a Tuner; V2's trainers are not
Tune trainables (raw V2 raises ``TuneError: Improper 'run'``). A compat trainer is a
function trainable: Tune calls ``trainer(config)`` once per trial, with the trial's
``param_space`` sample, on the resources :func:`trial_resources` asks for.

* v1: the trial runs Ray's own trainer-as-trainable path (``_train_coordinator_fn``, as
  ``BaseTrainer.as_trainable`` does): Ray's V1 trainer runs its training loop inside the
  trial, its worker group in the trial's placement group, every report a Tune result.
* v2: the trial runs the trainer's ``fit()`` on Ray's V2 engine (V2's documented pattern:
  a Train run inside a Tune function) and forwards every rank-0 round, with its
  checkpoint, to ``ray.tune.report`` as it completes, so schedulers (ASHA, PBT) see every
  epoch and ``ResultGrid.get_best_result()`` has the trial's metrics and checkpoint.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Callable
from typing import Any

from compat_core import messages
from compat_core.config import ScalingConfig, coerce
from compat_core.run.ledger import LedgerClient

# The longest the trial's thread waits in the ledger for the next round (the run's end wakes it).
WAIT_S = 1.0
# Keys of a param_space sample that set trainer arguments; anything else is an error.
TRAINER_KEYS = ("train_loop_config", "scaling_config", "datasets", "params")


def with_sample(trainer: Any, config: dict[str, Any], *, takes_params: bool = False) -> Any:
    """A copy of ``trainer`` with one ``param_space`` sample merged in, as V1's Tune
    integration merges it: ``train_loop_config`` (and, for a trainer that ``takes_params``, a
    tree trainer's V1 form, ``params``) deep-updated, ``scaling_config`` replaced, ``datasets``
    updated."""
    unknown = sorted(set(config) - set(TRAINER_KEYS))
    if unknown:
        raise ValueError(messages.unknown_param_space_keys(type(trainer).__name__, unknown, TRAINER_KEYS))
    trial = copy.copy(trainer)
    loop = config.get("train_loop_config", {})
    if "params" in config:
        if not takes_params:
            raise ValueError(messages.unknown_param_space_keys(type(trainer).__name__, ["params"], TRAINER_KEYS))
        loop = {**loop, **config["params"]}
    if loop:
        trial.train_loop_config = _deep_update(copy.deepcopy(trainer.train_loop_config or {}), loop)
    if "scaling_config" in config:
        trial.scaling_config = scaling_of(config["scaling_config"])
    if "datasets" in config:
        trial.datasets = {**(trainer.datasets or {}), **config["datasets"]}
    return trial


def scaling_of(value: Any) -> ScalingConfig:
    if isinstance(value, dict):
        return ScalingConfig(**value)
    return coerce(ScalingConfig, value, "param_space['scaling_config']")


def _deep_update(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_update(base[key], value)
        else:
            base[key] = value
    return base


CONSUMER = "tune"  # what run_forwarding is called as a reader of the ledger's delivered rounds


def run_forwarding(run: Callable[[], Any], ledger: LedgerClient, report: Callable[..., None]) -> Any:
    """Run ``run()`` on a thread and, on this one, call ``report(metrics, checkpoint=...)``
    with rank 0's part of every round the ledger delivers, in order, as it is delivered
    (Tune wants its results from the trial's own thread). Returns what ``run`` returned
    after the last round is forwarded, or raises what it raised."""

    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = run()
        except BaseException as exc:  # re-raised on the trial's thread
            outcome["error"] = exc
        finally:
            with contextlib.suppress(Exception):
                ledger.wake_consumers()  # the trial's thread, waiting for a round, ends at once

    running = threading.Thread(target=target, name="compat-train-in-trial", daemon=True)
    running.start()
    seen = 0
    while True:
        done = not running.is_alive()
        # Fed by the ledger: each round as it is delivered; done: every round, once run() ended.
        rounds = ledger.delivered_since(CONSUMER, seen, done, 0.0 if done else WAIT_S)
        for round_ in rounds:
            report(dict(round_.rank0.metrics), checkpoint=round_.checkpoint)
        seen += len(rounds)
        if done:
            break
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
