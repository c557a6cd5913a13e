"""``compat.get_context()``: one context object for both engines."""

from __future__ import annotations

import posixpath
from typing import Any

from ray.train.context import TrainContext as _V1TrainContext

from compat_core import switch
from compat_core.migration import usage, where
from compat_core.releases import adapters, standins


def _int(value: Any) -> Any:
    """Ray's rank or size as an int; None as Ray gives it where there is none (a Ray Tune
    function trainable's context, under V1)."""
    return None if value is None else int(value)


def _v2_train_context() -> type:
    from ray.train.v2.api.context import TrainContext as V2TrainContext

    return V2TrainContext


class TrainContext(*standins.ray_bases(_v2_train_context(), _V1TrainContext)):  # type: ignore[misc]
    """Rank, size and run information of the current worker: a subclass of Ray's
    ``TrainContext`` (V2's and V1's), answering from the context of the engine running.

    The V1-only trial API (``get_trial_name/id/dir/resources``) still answers under v2,
    with the closest V2 value, after a :class:`compat.V1OnlyWarning`; strict mode raises.
    With V1 semantics on V2's engine it answers as V1 would, from the V1-style trial
    directory the run writes to (``<storage>/<experiment>/<Trainer>_<id>_00000_0_<date>``).
    """

    def __init__(self, ray_context: Any, mode: switch.Mode) -> None:
        self._ray = ray_context
        self._mode = mode
        # V1 semantics on V2's engine: the run writes to a V1-style trial directory.
        self._v1_on_v2 = mode.emulates_v1_engine

    def get_world_rank(self) -> int:
        return _int(self._ray.get_world_rank())

    def get_local_rank(self) -> int:
        return _int(self._ray.get_local_rank())

    def get_world_size(self) -> int:
        return _int(self._ray.get_world_size())

    def get_local_world_size(self) -> int:
        return _int(self._ray.get_local_world_size())

    def get_node_rank(self) -> int:
        return _int(self._ray.get_node_rank())

    def get_experiment_name(self) -> str:
        if self._v1_on_v2:
            return posixpath.basename(posixpath.dirname(self._trial_dir()))
        return str(self._ray.get_experiment_name())

    def get_storage(self) -> Any:
        return self._ray.get_storage()

    def get_metadata(self) -> dict[str, Any]:
        usage.relied_on("resume-from-checkpoint", "get_context().get_metadata()", mode=self._mode)
        if self._v1_on_v2:  # Ray's V1 context warns (on V1's engine, Ray's own method does)
            where.call_for_user(adapters.v1_context_deprecation, "get_metadata")
        if self._mode.keeps_every_report:
            return dict(where.call_for_user(self._ray.get_metadata))
        return {}

    def _trial(self, name: str, v1_value: Any, v2_value: Any, v1_on_v2: Any = None) -> Any:
        usage.relied_on("trial-api", f"get_context().{name}()", mode=self._mode)
        if self._v1_on_v2:
            where.call_for_user(adapters.v1_context_deprecation, name)  # Ray V1's, as on V1's engine
            return v1_on_v2() if v1_on_v2 is not None else v2_value()
        return where.call_for_user(v1_value) if self._mode.keeps_every_report else v2_value()

    def _trial_dir(self) -> str:
        return str(self.get_storage().experiment_fs_path)

    def _trial_name(self) -> str:
        # <Trainer>_<id>_00000_0_<date>: the trial name is <Trainer>_<id>_00000
        return posixpath.basename(self._trial_dir()).rsplit("_0_", 1)[0]

    def get_trial_name(self) -> str:
        return str(self._trial("get_trial_name", self._ray.get_trial_name, self.get_experiment_name, self._trial_name))

    def get_trial_id(self) -> str:
        return str(
            self._trial(
                "get_trial_id",
                self._ray.get_trial_id,
                self.get_experiment_name,
                lambda: self._trial_name().split("_", 1)[-1],
            )
        )

    def get_trial_dir(self) -> str:
        return str(self._trial("get_trial_dir", self._ray.get_trial_dir, self._trial_dir))

    def get_trial_resources(self) -> Any:
        return self._trial("get_trial_resources", self._ray.get_trial_resources, lambda: None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ray, name)

    def __repr__(self) -> str:
        return f"TrainContext(backend={self._mode.backend!r}, rank={self.get_world_rank()})"


def _delegated(name: str) -> Any:
    def method(self: TrainContext, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._ray, name)(*args, **kwargs)

    method.__name__ = name
    return method


# What Ray's classes have and compat does not answer itself is the running engine's context's
# (as __getattr__ gives any other name), not the base class's own answer.
for _base in TrainContext.__mro__[1:-1]:
    for _name, _value in vars(_base).items():
        if not _name.startswith("_") and callable(_value) and _name not in vars(TrainContext):
            setattr(TrainContext, _name, _delegated(_name))
TrainContext.__abstractmethods__ = frozenset()
