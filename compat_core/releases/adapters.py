"""Every private name of Ray compat uses, each reached here and only here
(``tests/test_layers.py`` fails on a private import of Ray anywhere else), so a release that moves
one breaks this module, and each function says what the name is for."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from compat_core.releases.facts import since

V1_MODULES = ("ray.train.base_trainer", "ray.train.data_parallel_trainer", "ray.train._internal.session")
"""V1's trainer and its worker session: what Ray's V1 engine runs (its ``BaseTrainer.fit``)."""


@functools.cache
def has_v1_engine() -> bool:
    """Whether the installed Ray can still run Train V1 (announced for deletion): it ships V1's
    trainer and session, and it honours ``RAY_TRAIN_V2_ENABLED=0`` (its own switch,
    ``is_v2_enabled()``, answers V1 for it without raising). Not the presence of one module: RLlib
    imports V1's ``BackendExecutor`` (ray-project/ray#60877), and a pure V2 run imports it in 2.60,
    so it may well outlive Train V1. Asked once per process."""
    if any(importlib.util.find_spec(module) is None for module in V1_MODULES):
        return False
    from ray.train.v2._internal import constants

    variable = constants.V2_ENABLED_ENV_VAR
    before = os.environ.get(variable)
    os.environ[variable] = "0"
    try:
        return not rays_switch_answer()
    except Exception:  # a Ray that refuses the value: it has no V1 to select
        return False
    finally:
        if before is None:
            del os.environ[variable]
        else:
            os.environ[variable] = before


def rays_switch_answer() -> bool:
    """Ray's own reading of ``RAY_TRAIN_V2_ENABLED`` as it is set now (``is_v2_enabled()``),
    raising where Ray raises: a Ray without Train V1 may refuse a false value."""
    from ray.train.v2._internal import constants

    return bool(constants.is_v2_enabled())


def v2_report_owner() -> Any:
    """The object whose ``report`` method every V2 report in this worker goes through
    (``ray.train.report``, library callbacks and compat alike): the worker's
    ``TrainFnUtils`` from 2.49, its ``TrainContext`` before."""
    if since("2.49"):
        from ray.train.v2._internal.execution.train_fn_utils import get_train_fn_utils

        return get_train_fn_utils()
    return v2_train_context()


def unflattened_lookup(flat_key: str, lookup: dict[str, Any], default: Any = None) -> Any:
    """Ray's lookup of a metric by a ``"a/b"`` key in nested metrics (``Result.get_best_checkpoint``)."""
    from ray._private.dict import unflattened_lookup as lookup_of

    return lookup_of(flat_key, lookup, default=default)


def v2_train_context() -> Any:
    """The V2 worker's internal ``TrainContext`` (storage, the persisted checkpoint)."""
    from ray.train.v2._internal.execution.context import get_train_context

    return get_train_context()


def v2_worker_group_id() -> str:
    """An id of this V2 worker's group: its synchronization actor's, which V2's controller
    starts once per worker group (Ray 2.44 to 2.60 alike); a group it resizes is a new one."""
    actor = v2_train_context().get_synchronization_actor()
    return str(actor._ray_actor_id.hex())


def worker_group_placement_group(worker_group: Any) -> Any:
    """The placement group of a V2 worker group: its state's handle since 2.5x
    (``get_worker_group_state().placement_group_handle``), the state's own attribute before
    (2.44); None if neither is there."""
    state = (
        worker_group.get_worker_group_state()
        if hasattr(worker_group, "get_worker_group_state")
        else getattr(worker_group, "_worker_group_state", None)
    )
    handle = getattr(state, "placement_group_handle", None)
    if handle is not None:
        return handle.placement_group
    return getattr(state, "placement_group", None)


def in_tune_function() -> bool:
    """Whether this process runs a Ray Tune function trainable now (Ray's V1 session of a Tune
    trial, which has no world rank; a Train worker's has one)."""
    session = v1_session().get_session()
    return session is not None and getattr(session, "world_rank", 0) is None


def in_rays_v2_worker() -> bool:
    """Whether a training function of Ray's V2 engine runs in this process now (V2's train
    context is set). compat's own workers run on it too: ask ``compat_core.run.worker.current()``
    first."""
    from ray.train.v2._internal.execution import context

    try:
        context.get_train_context()
    except RuntimeError:
        return False
    return True


def in_rays_v1_worker() -> bool:
    """Whether a training function of Ray's V1 engine runs in this process now (V1's session with
    a world rank: a Tune function trainable's has none)."""
    session = v1_session().get_session()
    return session is not None and getattr(session, "world_rank", None) is not None


def rays_train_function(v2: bool, name: str) -> Callable[..., Any] | None:
    """Ray's own ``ray.train.<name>`` of its V2 engine (``v2``) or V1's, as raw Ray's training
    function calls it there; None where V1 has no such function (``get_all_reported_checkpoints``,
    ``get_preemption_info``)."""
    if v2:
        from ray.train.v2.api import train_fn_utils

        return getattr(train_fn_utils, name, None)
    if name == "get_context":
        from ray.train.context import get_context

        return get_context
    return getattr(v1_session(), name, None) if name in ("report", "get_checkpoint", "get_dataset_shard") else None


def v1_trial_env_vars() -> frozenset[str]:
    """The driver's variables V1's engine hands its run (Tune's trainable actor, and through it
    every worker): object-store credentials (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_SECURITY_TOKEN``, ``AWS_SESSION_TOKEN``) and Train's own; Tune's list in every release."""
    from ray.tune.execution.class_cache import ENV_VARS_TO_PROPAGATE

    return frozenset(ENV_VARS_TO_PROPAGATE)


def v1_trial_credentials() -> list[str]:
    """Of :func:`v1_trial_env_vars`, the object-store credentials (the ``AWS_*`` names), sorted."""
    return sorted(name for name in v1_trial_env_vars() if name.startswith("AWS_"))


@contextlib.contextmanager
def v2_controller_also_gets(names: Iterable[str]) -> Iterator[None]:
    """Inside the block, V2's engine hands ``names`` (those set in the driver) to its controller
    and from there to every worker, beside Train's own variables: its list,
    ``ENV_VARS_TO_PROPAGATE``, read by ``get_env_vars_to_propagate()`` when the controller
    starts (driver) and each worker group starts (controller), every release 2.44-2.60."""
    from ray.train.v2._internal import constants

    before = constants.ENV_VARS_TO_PROPAGATE
    constants.ENV_VARS_TO_PROPAGATE = set(before) | set(names)
    try:
        yield
    finally:
        constants.ENV_VARS_TO_PROPAGATE = before


def v1_session() -> Any:
    """V1's worker session module (``ray.train._internal.session``): ``get_session``,
    ``report``, ``get_checkpoint``, ``get_dataset_shard``, the functions V1's public ones call."""
    from ray.train._internal import session

    return session


def v1_train_coordinator() -> Callable[..., Any]:
    """What the Tune trainable of V1's ``BaseTrainer.as_trainable`` runs in a trial."""
    from ray.train.base_trainer import _train_coordinator_fn

    return _train_coordinator_fn


def set_v1_restore_path(trainer: Any, path: str, filesystem: Any) -> None:
    """What V1's ``Trainer.restore(path)`` sets on the trainer it builds: its ``fit()`` restores
    the Tune experiment at ``path``."""
    trainer._restore_path = path
    trainer._restore_storage_filesystem = filesystem


def v1_storage_context(parent: str, experiment: str, filesystem: Any) -> Any:
    """V1's ``StorageContext`` of an experiment directory (no trial directory), as Tune's
    callbacks are handed one."""
    from ray.train._internal.storage import StorageContext

    return StorageContext(parent, experiment_dir_name=experiment, storage_filesystem=filesystem, trial_dir_name="")


def tree_train_fn(framework: str) -> Callable[..., Any]:
    """The per-worker training function of the V1 form of ``XGBoostTrainer`` or
    ``LightGBMTrainer`` (``framework``: ``"xgboost"`` or ``"lightgbm"``)."""
    if framework == "xgboost":
        from ray.train.xgboost.xgboost_trainer import _xgboost_train_fn_per_worker

        return _xgboost_train_fn_per_worker
    from ray.train.lightgbm.lightgbm_trainer import _lightgbm_train_fn_per_worker

    return _lightgbm_train_fn_per_worker


def contains_tensor(value: Any) -> bool:
    """Ray's test of whether reported metrics hold a torch tensor (which Ray rejects)."""
    from ray.air._internal.torch_utils import contains_tensor as ray_contains_tensor

    return bool(ray_contains_tensor(value))


def v2_worker_group_callback() -> type:
    """The base class of a callback V2's controller tells of each worker group it starts."""
    from ray.train.v2._internal.execution.callback import WorkerGroupCallback

    return WorkerGroupCallback


def v1_trainer_deprecations(
    scaling_config: Any, run_config: Any, tune_callbacks: list[Any], metadata: Any, resume_from_checkpoint: Any
) -> None:
    """The ``RayDeprecationWarning``s Ray's V1 trainer raises when made with these arguments
    (``BaseTrainer.__init__``: ``metadata=``, ``resume_from_checkpoint=``; its
    ``_log_v2_deprecation_warnings``: the Tune options), raised by Ray's own code with Ray's
    messages; none when Ray's ``RAY_TRAIN_ENABLE_V2_MIGRATION_WARNINGS`` is off, none on a
    release without them. ``run_config``: compat's (its ``_verbose`` is the verbose given)."""
    from types import SimpleNamespace

    try:
        from ray.train.base_trainer import _RESUME_FROM_CHECKPOINT_DEPRECATION_WARNING, BaseTrainer
        from ray.train.constants import _v2_migration_warnings_enabled
        from ray.train.context import _GET_METADATA_DEPRECATION_MESSAGE
        from ray.train.utils import _log_deprecation_warning
    except ImportError:
        return
    if not _v2_migration_warnings_enabled():
        return
    if metadata is not None:
        _log_deprecation_warning(_GET_METADATA_DEPRECATION_MESSAGE)
    if resume_from_checkpoint is not None:
        _log_deprecation_warning(_RESUME_FROM_CHECKPOINT_DEPRECATION_WARNING)
    run = SimpleNamespace(
        failure_config=run_config.failure_config,
        _verbose=run_config._verbose,
        log_to_file=run_config.log_to_file,
        stop=run_config.stop,
        callbacks=tune_callbacks or None,  # compat's RunConfig fills in [] (and UserCallbacks are V2's)
        progress_reporter=run_config.progress_reporter,
        sync_config=run_config.sync_config,
    )
    trainer = SimpleNamespace(scaling_config=scaling_config, run_config=run)
    try:
        BaseTrainer._log_v2_deprecation_warnings(trainer)  # type: ignore[arg-type, no-untyped-call]  # what it reads
    except DeprecationWarning:  # raised, not warned, when Ray's V2 is enabled: not V1's trainer
        pass
    except AttributeError:  # a release whose trainer warns otherwise
        pass


def v1_restore_deprecation() -> None:
    """The ``RayDeprecationWarning`` of Ray's V1 ``Trainer.restore`` (Ray's
    ``@Deprecated(warning=True)`` on it), raised by Ray's own decorator."""
    try:
        from ray.train.base_trainer import _TRAINER_RESTORE_DEPRECATION_WARNING
    except ImportError:
        return
    from ray.util.annotations import Deprecated

    Deprecated(message=_TRAINER_RESTORE_DEPRECATION_WARNING, warning=True)(lambda: None)()


def v1_context_deprecation(method: str) -> None:
    """The ``RayDeprecationWarning`` Ray's V1 ``TrainContext`` raises at ``method``
    (``get_metadata``, ``get_trial_name/id/dir/resources``), with Ray's message; none when Ray's
    ``RAY_TRAIN_ENABLE_V2_MIGRATION_WARNINGS`` is off, none on a release without it."""
    try:
        from ray.train.constants import _v2_migration_warnings_enabled
        from ray.train.context import _GET_METADATA_DEPRECATION_MESSAGE, _TUNE_SPECIFIC_CONTEXT_DEPRECATION_MESSAGE
    except ImportError:
        return
    if not _v2_migration_warnings_enabled():
        return
    from ray.util.annotations import Deprecated

    message = (
        _GET_METADATA_DEPRECATION_MESSAGE
        if method == "get_metadata"
        else _TUNE_SPECIFIC_CONTEXT_DEPRECATION_MESSAGE.format(method)
    )
    Deprecated(message=message, warning=True)(lambda: None)()


def v1_can_restore_deprecations(path: Any, storage_filesystem: Any) -> None:
    """The ``RayDeprecationWarning``s of Ray's V1 ``Trainer.can_restore(path)``, which differ by
    release (one from 2.5x, three on 2.44): raised by calling it (it looks for its
    ``trainer.pkl`` at ``path``; its answer and any error it raises are not compat's)."""
    import contextlib

    from ray.train.base_trainer import BaseTrainer

    with contextlib.suppress(Exception):
        BaseTrainer.can_restore(path, storage_filesystem)


def v2_snapshot_error() -> type[Exception]:
    """What Ray's V2 checkpoint manager raises on a snapshot it cannot read
    (``CheckpointManagerInitializationError``), for compat's reading of one where Ray's
    ``Result.from_path`` cannot (before 2.52)."""
    from ray.train.v2._internal.exceptions import CheckpointManagerInitializationError

    return CheckpointManagerInitializationError


def user_exception(error: BaseException) -> tuple[BaseException, str | None]:
    """A V2 worker's error as the user's code raised it, with its traceback's text when Ray kept
    one: Ray 2.44's V2 hands the controller a ``UserExceptionWithTraceback`` wrapping it
    (``_base_exc``, ``_traceback_str``); later releases the error itself."""
    base = getattr(error, "_base_exc", None)
    if isinstance(base, BaseException):
        trace = getattr(error, "_traceback_str", None)
        return base, trace if isinstance(trace, str) else None
    return error, None
