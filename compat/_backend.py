"""The interface both backends implement; the trainer talks only to this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

from compat._ledger import LedgerSnapshot
from compat._model import Semantics
from compat.config import RunConfig, ScalingConfig
from compat.result import Result


@dataclass
class TrainJob:
    """Everything a backend needs to run one ``fit()``."""

    train_fn: Callable[..., Any]
    train_loop_config: Optional[dict[str, Any]]
    scaling: ScalingConfig
    run: RunConfig
    user_callbacks: list[Any]
    other_callbacks: list[Any]
    ledger: Any
    torch_config: Any = None
    datasets: Optional[dict[str, Any]] = None
    dataset_config: Any = None
    validation_config: Any = None
    metadata: Optional[dict[str, Any]] = None
    resume_from_checkpoint: Any = None
    start_time: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class Backend(Protocol):
    name: str
    semantics: Semantics

    def run(self, job: TrainJob) -> Any:
        """Run the job on Ray's engine; return Ray's result or raise Ray's error."""
        ...

    def build_result(
        self, job: TrainJob, raw: Any, snapshot: LedgerSnapshot, error: Optional[BaseException]
    ) -> Result:
        """Combine Ray's result (None after a failure) with the ledger into a compat Result."""
        ...
