"""The interface both backends implement; the trainer talks only to this."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from compat._ledger import LedgerSnapshot
from compat._model import Semantics
from compat.config import RunConfig, ScalingConfig
from compat.result import Result


@dataclass
class TrainJob:
    """Everything a backend needs to run one ``fit()``."""

    train_fn: Callable[..., Any]
    train_loop_config: dict[str, Any] | None
    scaling: ScalingConfig
    run: RunConfig
    user_callbacks: list[Any]
    other_callbacks: list[Any]
    ledger: Any
    torch_config: Any = None
    datasets: dict[str, Any] | None = None
    dataset_config: Any = None
    validation_config: Any = None
    metadata: dict[str, Any] | None = None
    resume_from_checkpoint: Any = None
    start_time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class Backend(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def semantics(self) -> Semantics: ...

    def run(self, job: TrainJob) -> Any:
        """Run the job on Ray's engine; return Ray's result or raise Ray's error."""
        ...

    def build_result(self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: BaseException | None) -> Result:
        """Combine Ray's result (None after a failure) with the ledger into a compat Result."""
        ...
