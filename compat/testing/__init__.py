"""Evidence that training code behaves the same under V1 and V2, and exactly how it differs.

    from compat.testing import run_both, assert_equivalent

    comparison = run_both(train_func, train_loop_config={...}, scaling_config=ScalingConfig(num_workers=2))
    assert_equivalent(comparison)   # raises when the shared semantics differ; returns the expected differences

Hypothesis strategies for report schedules are in :mod:`compat.testing.strategies`; the pytest
fixture ``compat_run_both`` is registered by the installed plugin. See docs/testing.md.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from compat.callbacks import UserCallback
from compat.testing._compare import Difference, differences, observe, same, user_keys
from compat.testing.schedule import Schedule, replay_schedule
from compat_core import switch
from compat_core.config import RunConfig, ScalingConfig, coerce
from compat_core.integration.patch import scoped_env
from compat_core.semantics.observed import V1Semantics, V2Semantics
from compat_core.semantics.result import Result
from compat_core.semantics.rounds import Outcome

__all__ = [
    "Comparison",
    "Difference",
    "Schedule",
    "V1Semantics",
    "V2Semantics",
    "assert_equivalent",
    "observe",
    "replay_schedule",
    "run_both",
    "run_schedule",
    "same",
    "user_keys",
]


class _RecordAfterReport(UserCallback):
    """Writes every ``after_report`` call to a file (callbacks do not run on the driver)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def after_report(self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: Any) -> None:
        import json

        with open(self.path, "a") as f:
            f.write(json.dumps({"metrics": metrics, "checkpoint": checkpoint is not None}, default=repr) + "\n")


@dataclass
class Comparison:
    """One training function run under both backends, as results and comparable outcomes."""

    v1: Outcome
    v2: Outcome
    results: dict[str, Result] = field(repr=False, default_factory=dict)

    def differences(self) -> list[Difference]:
        return differences(self.v1, self.v2)


def run_both(
    train_func: Callable[..., Any],
    *,
    train_loop_config: dict[str, Any] | None = None,
    scaling_config: Any = None,
    run_config: Any = None,
    datasets: dict[str, Any] | None = None,
    validation_config: Any = None,
    env: Mapping[str, str] | None = None,
    storage_path: str | None = None,
) -> Comparison:
    """Run ``train_func`` with compat's v1 backend, then v2, and return both outcomes.

    Each run gets its own storage directory (V2 would otherwise resume the first run) and a
    recording ``after_report`` callback next to any callbacks in ``run_config``. ``env``
    is set during both runs (e.g. ``{"COMPAT_STRICT": "1"}``).
    A run that fails still yields an outcome, from the ``TrainingFailedError``'s result.
    """
    from compat import TrainingFailedError
    from compat.torch import TorchTrainer

    base = storage_path or tempfile.mkdtemp(prefix="compat_run_both_")
    outcomes: dict[str, Outcome] = {}
    results: dict[str, Result] = {}
    for backend in ("v1", "v2"):
        directory = os.path.join(base, backend)
        os.makedirs(directory, exist_ok=True)
        log = os.path.join(directory, "after_report.jsonl")
        run = coerce(RunConfig, run_config, "run_config")
        run = dataclasses.replace(run, storage_path=directory, callbacks=[*run.callbacks, _RecordAfterReport(log)])
        trainer = TorchTrainer(
            train_func,
            train_loop_config=train_loop_config,
            scaling_config=scaling_config or ScalingConfig(),
            run_config=run,
            datasets=datasets,
            validation_config=validation_config,
        )
        with scoped_env({**(env or {}), **switch.selecting(switch.Generation(backend))}):
            try:
                result = trainer.fit()
            except TrainingFailedError as error:
                result = error.result
        results[backend] = result
        outcomes[backend] = observe(result, log)
    return Comparison(outcomes["v1"], outcomes["v2"], results)


def run_schedule(schedule: Schedule, **kwargs: Any) -> Comparison:
    """Replay a report schedule under both backends."""
    env = dict(kwargs.pop("env", {}))
    return run_both(
        replay_schedule,
        train_loop_config={"schedule": schedule.to_json()},
        scaling_config=ScalingConfig(num_workers=schedule.num_workers),
        env=env,
        **kwargs,
    )


def assert_equivalent(comparison: Comparison | tuple[Outcome, Outcome]) -> list[Difference]:
    """Check V1 and V2 agree on the shared semantics; return the documented differences.

    Shared: the same checkpoints in the same order, the same rank-0 metrics attached to each,
    the same validated metrics and statuses, the same ``after_report`` calls. Every other
    difference must be one that docs/compatibility.md documents; an unexplained one fails.
    """
    v1, v2 = (comparison.v1, comparison.v2) if isinstance(comparison, Comparison) else comparison
    found = differences(v1, v2)
    unexplained = [d for d in found if d.explanation is None]
    if unexplained:
        lines = ["V1 and V2 differ in ways no documented V1/V2 difference explains:"]
        lines += [f"  {d}" for d in unexplained]
        explained = [d for d in found if d.explanation is not None]
        if explained:
            lines.append("Expected differences (documented):")
            lines += [f"  {d}" for d in explained]
        raise AssertionError("\n".join(lines))
    return found
