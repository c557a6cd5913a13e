"""Which Ray trainer class runs a compat trainer, per engine.

compat's trainers are one class (:class:`compat._trainer.DataParallelTrainer`) with a
:class:`Framework` each: the Ray class it becomes under each engine, the name of its
backend-config argument, and how a config made for one engine is carried to the other.
Nothing here imports Ray until a run asks for a class.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any

from compat_core.releases import facts
from compat_core.switch import V1, Generation


def load(path: str) -> Any:
    """``"package.module:Name"`` -> the object."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Framework:
    """One kind of trainer. ``config_arg`` is the backend-config keyword of Ray's class."""

    name: str
    v1_trainer: str
    v2_trainer: str
    config_arg: str
    v1_config: str | None = None  # the config class each engine expects, when they differ
    v2_config: str | None = None
    # ``ray.train.<framework>``'s own V1 class where it subclasses ``v1_trainer`` (Ray 2.44's
    # LightGBM trainer of the legacy form): the class compat's subclasses, for isinstance.
    v1_exported: str | None = None

    def public_classes(self) -> tuple[Any, Any]:
        """Ray's ``(V2, V1)`` trainer classes of this kind as ``ray.train`` exports them."""
        return load(self.v2_trainer), load(self.v1_exported or self.v1_trainer)

    @property
    def trainer_name(self) -> str:
        """The name of Ray's V1 trainer class (``TorchTrainer``): V1 names trials after it."""
        return self.v1_trainer.rpartition(":")[2]

    def trainer_class(self, engine: Generation) -> Any:
        """Ray's trainer class of this kind on ``engine``."""
        return load(self.v1_trainer if engine is V1 else self.v2_trainer)

    def config_for(self, config: Any, engine: Generation) -> Any:
        """``config`` as the engine's own class (V2's XGBoostConfig subclasses V1's; a V1
        instance is copied field by field into V2's class and back)."""
        wanted = self.v1_config if engine is V1 else self.v2_config
        if config is None or wanted is None:
            return config
        cls = load(wanted)
        ours = {load(path) for path in (self.v1_config, self.v2_config) if path}
        if type(config) is cls or type(config) not in ours:
            return config  # already right, or a user's own subclass: passed as given
        assert dataclasses.is_dataclass(config)
        fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.init}
        return cls(**fields)


TORCH = Framework(
    "torch",
    v1_trainer="ray.train.torch.torch_trainer:TorchTrainer",
    v2_trainer="ray.train.v2.torch.torch_trainer:TorchTrainer",
    config_arg="torch_config",
)
DATA_PARALLEL = Framework(
    "data_parallel",
    v1_trainer="ray.train.data_parallel_trainer:DataParallelTrainer",
    v2_trainer="ray.train.v2.api.data_parallel_trainer:DataParallelTrainer",
    config_arg="backend_config",
)
XGBOOST = Framework(
    "xgboost",
    # Ray's V1 XGBoostTrainer with a training function (compat turns the legacy form into one).
    v1_trainer="ray.train.xgboost.xgboost_trainer:XGBoostTrainer",
    v2_trainer="ray.train.v2.xgboost.xgboost_trainer:XGBoostTrainer",
    config_arg="xgboost_config",
    v1_config="ray.train.xgboost.config:XGBoostConfig",
    v2_config="ray.train.v2.xgboost.config:XGBoostConfig" if facts.V2_XGBOOST_CONFIG else None,
)
LIGHTGBM = Framework(
    "lightgbm",
    v1_trainer=facts.V1_LIGHTGBM_TRAINER,
    v2_trainer="ray.train.v2.lightgbm.lightgbm_trainer:LightGBMTrainer",
    config_arg="lightgbm_config",
    v1_exported="ray.train.lightgbm.lightgbm_trainer:LightGBMTrainer",
)
TENSORFLOW = Framework(
    "tensorflow",
    v1_trainer="ray.train.tensorflow.tensorflow_trainer:TensorflowTrainer",
    v2_trainer="ray.train.v2.tensorflow.tensorflow_trainer:TensorflowTrainer",
    config_arg="tensorflow_config",
)
