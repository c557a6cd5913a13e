"""V2's local mode, as raw V2 runs it: with ``ScalingConfig(num_workers=0)`` the training
function runs in the driver's process, without workers, controller or storage (Ray's
``LocalController``, Ray 2.50 and newer), and ``fit()`` returns the last report's metrics, the
latest checkpoint and the function's return value. Under V1's semantics raw V1 refuses the run at
``fit()`` with its ``ValueError``, and so does compat, on either engine
(docs/compatibility.md §33)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from compat_core import messages, switch
from compat_core.errors import CompatError
from compat_core.releases import facts, standins
from compat_core.semantics.result import Result, ResultParts, assemble

_running = False  # a local-mode fit() is running its training function in this process


def running() -> bool:
    """Whether the training function runs in local mode here: compat's ``train`` functions then
    answer as Ray V2's own do in local mode."""
    return _running


@contextlib.contextmanager
def _in_local_mode() -> Iterator[None]:
    global _running
    before, _running = _running, True
    try:
        yield
    finally:
        _running = before


def v1_refusal(num_workers: Any) -> ValueError:
    """What raw V1's ``fit()`` raises for ``num_workers=0`` (Ray's
    ``DataParallelTrainer._validate_scaling_config``, which needs a started Ray to be called)."""
    return ValueError(messages.ray_num_workers_positive(num_workers))


def fit(trainer: Any) -> Result:
    """``trainer.fit()`` in local mode, in the mode selected now (``trainer``: a compat
    ``DataParallelTrainer``; not imported here: the trainer imports this module)."""
    mode = switch.mode()
    if mode.keeps_every_report:
        raise v1_refusal(trainer.scaling_config.num_workers)
    if not facts.LOCAL_MODE:  # raw V2's controller refuses it then: a ValueError as Ray's, saying what to do
        needs = messages.needs_newer_ray("ScalingConfig(num_workers=0) (local mode)", "2.50")
        raise ValueError(messages.refused_because(str(v1_refusal(trainer.scaling_config.num_workers)), needs))
    if trainer.train_loop_per_worker is None:  # a tree trainer in V1's params= form: workers only
        raise CompatError(messages.local_mode_needs_workers(type(trainer).__name__))
    framework = trainer._framework
    _, _, RunConfig, ScalingConfig = standins.v2_config_classes()
    raw_trainer = framework.trainer_class(switch.V2)(
        trainer.train_loop_per_worker,
        train_loop_config=trainer.train_loop_config,
        **{framework.config_arg: framework.config_for(trainer.backend_config, switch.V2)},
        scaling_config=ScalingConfig(num_workers=0),
        run_config=RunConfig(name=trainer.run_config.name),
        datasets=trainer.datasets,
    )
    with _in_local_mode():
        raw = raw_trainer.fit()
    parts = ResultParts(metrics=raw.metrics, path=raw.path)
    return assemble(
        mode,
        parts,
        checkpoint=raw.checkpoint,
        error=raw.error,
        raw=raw,
        worker_metrics_dataframe=None,
        rounds=[],
        return_value=getattr(raw, "return_value", None),
    )


def ray_function(name: str) -> Callable[..., Any]:
    """Ray V2's own ``ray.train.<name>``, which answers in local mode."""
    from ray.train.v2.api import train_fn_utils

    function: Callable[..., Any] = getattr(train_fn_utils, name)
    return function
