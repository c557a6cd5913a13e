"""``compat.get_context()``: one context object for both engines."""

from __future__ import annotations

from typing import Any

from compat import _usage


class TrainContext:
    """Rank, size and run information of the current worker.

    The V1-only trial API (``get_trial_name/id/dir/resources``) still answers under v2,
    with the closest V2 value, after a :class:`compat.V1OnlyWarning`; strict mode raises.
    """

    def __init__(self, ray_context: Any, backend: str) -> None:
        self._ray = ray_context
        self._backend = backend

    def get_world_rank(self) -> int:
        return int(self._ray.get_world_rank())

    def get_local_rank(self) -> int:
        return int(self._ray.get_local_rank())

    def get_world_size(self) -> int:
        return int(self._ray.get_world_size())

    def get_local_world_size(self) -> int:
        return int(self._ray.get_local_world_size())

    def get_node_rank(self) -> int:
        return int(self._ray.get_node_rank())

    def get_experiment_name(self) -> str:
        return str(self._ray.get_experiment_name())

    def get_storage(self) -> Any:
        return self._ray.get_storage()

    def get_metadata(self) -> dict[str, Any]:
        _usage.relied_on("resume-from-checkpoint", "get_context().get_metadata()")
        if self._backend == "v1":
            return dict(self._ray.get_metadata())
        return {}

    def _trial(self, name: str, v1_value: Any, v2_value: Any) -> Any:
        _usage.relied_on("trial-api", f"get_context().{name}()")
        return v1_value() if self._backend == "v1" else v2_value()

    def get_trial_name(self) -> str:
        return str(self._trial("get_trial_name", self._ray.get_trial_name, self.get_experiment_name))

    def get_trial_id(self) -> str:
        return str(self._trial("get_trial_id", self._ray.get_trial_id, self.get_experiment_name))

    def get_trial_dir(self) -> str:
        return str(self._trial("get_trial_dir", self._ray.get_trial_dir, lambda: self.get_storage().experiment_fs_path))

    def get_trial_resources(self) -> Any:
        return self._trial("get_trial_resources", self._ray.get_trial_resources, lambda: None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ray, name)

    def __repr__(self) -> str:
        return f"TrainContext(backend={self._backend!r}, rank={self.get_world_rank()})"
