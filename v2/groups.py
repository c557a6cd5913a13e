"""The workers' placement groups of a V2 run inside a Ray Tune trial, freed when the trial
ends without V2 freeing them.

A placement group lives as long as the job that created it, whichever process created it.
V2's controller removes its workers' group when it shuts down; but a trial's controller is
owned by the trial's actor, and when Tune ends that actor first (a scheduler stopped the
trial, the trial reached ``max_t``, its node went away), the controller dies with it and the
group keeps its CPUs until the driver exits: later trials and runs wait forever for them.
Ray 2.60 watches for this with its ``PlacementGroupCleaner``, which asks the state API, so
only with the dashboard running (compatibility.md §24).

compat's :class:`GroupWatcher` asks Ray itself instead: a call on a dead actor raises. One
detached watcher per nested run holds the trial's actor handle; V2's controller registers each
worker group it starts (:class:`RegisterGroups`); when the trial's actor dies, the watcher
removes the groups still there. When the run's ``fit()`` returns or raises, its controller is
done: the trial releases the watcher, which removes what V2 left (nothing, unless the
controller died) and exits.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from compat_core.releases import adapters

# How often the watcher asks whether the trial's actor is alive.
CHECK_INTERVAL_S = 1.0
# How long V2's controller waits to register a group (the watcher starts as the run does).
REGISTER_TIMEOUT_S = 60.0

logger = logging.getLogger(__name__)


class GroupWatcher:
    """A detached Ray actor: the placement groups of one nested run, and the trial's actor
    whose death frees them."""

    def __init__(self, trial_actor: Any) -> None:
        self._trial = trial_actor
        self._groups: list[Any] = []
        self._done = threading.Event()
        self._lock = threading.Lock()

    def watch(self, group: Any) -> None:
        with self._lock:
            self._groups.append(group)

    def release(self) -> None:
        """The run's ``fit()`` ended: free what its controller left, and stop watching."""
        self._free()
        self._done.set()

    def run(self) -> None:
        """Watch until released, or until the trial's actor dies; then exit the actor."""
        import ray

        while not self._done.wait(CHECK_INTERVAL_S):
            if _dead(self._trial):
                self._free()
                break
        ray.actor.exit_actor()  # type: ignore[no-untyped-call]  # untyped in Ray

    def _free(self) -> None:
        from ray.util.placement_group import remove_placement_group

        with self._lock:
            groups, self._groups = self._groups, []
        for group in groups:
            try:
                remove_placement_group(group)  # a group V2 removed already: nothing happens
            except Exception:  # noqa: S110  # gone with its job: nothing to free
                pass


def _dead(actor: Any) -> bool:
    import ray
    from ray.exceptions import GetTimeoutError, RayActorError

    try:
        ray.get(actor.__ray_ready__.remote(), timeout=30)
    except RayActorError:
        return True
    except GetTimeoutError:  # busy or unreachable for now: not known to be dead
        return False
    return False


def start_watcher() -> Any:
    """A watcher for the run this trial starts, in the trial's actor (None elsewhere: no
    actor's death can then take the controller with it)."""
    import ray

    context = ray.get_runtime_context()
    if context.get_actor_id() is None:
        return None
    actor_class = ray.remote(num_cpus=0)(GroupWatcher)
    watcher: Any = actor_class.options(
        max_concurrency=4,
        lifetime="detached",
        # Not in the trial's placement group (Tune's trials capture their child actors): the
        # watcher must outlive it.
        scheduling_strategy="DEFAULT",
    ).remote(context.current_actor)
    watcher.run.remote()
    return watcher


class RegisterGroups(adapters.v2_worker_group_callback()):  # type: ignore[misc]  # Ray's class, from releases
    """In V2's controller: each worker group it starts is registered with the watcher before
    the workers train."""

    def __init__(self, watcher: Any) -> None:
        self.watcher = watcher

    def after_worker_group_start(self, worker_group: Any) -> None:
        import ray

        group = adapters.worker_group_placement_group(worker_group)
        if group is None:
            return
        try:
            ray.get(self.watcher.watch.remote(group), timeout=REGISTER_TIMEOUT_S)
        except Exception as exc:  # the watcher is gone or stuck: the run goes on without it
            logger.warning("compat could not register a worker group with its watcher (%s)", exc)
