"""Small programs run against raw ``ray.train`` and against ``compat`` in one process, under the
``RAY_TRAIN_V2_ENABLED`` it runs with; prints what each program observed with each, as JSON
(``tests/compat/test_ray_oracle.py`` compares them). No Ray cluster: configs, results, errors,
trainers as built on the driver.

A program is a function of a namespace ``t`` (``t.train``: the module in place of
``ray.train``, ``t.torch``: of ``ray.train.torch``) returning plain values. What it observes is
its value, or the exception it raised: Ray's class name (compat's may be a subclass: checked
here) and the first line of the message.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import types
from collections.abc import Callable
from typing import Any

V2 = os.environ.get("RAY_TRAIN_V2_ENABLED") == "1"
Program = Callable[[Any], Any]
PROGRAMS: dict[str, tuple[str, Program]] = {}  # name -> (settings it runs in: "01", "0", "1", program)


def program(settings: str = "01") -> Callable[[Program], Program]:
    def register(function: Program) -> Program:
        PROGRAMS[function.__name__] = (settings, function)
        return function

    return register


def _checkpoints(t: Any) -> list[Any]:
    base = tempfile.mkdtemp()
    made = []
    for i, loss in enumerate([3.0, 1.0, 2.0]):
        os.makedirs(f"{base}/c{i}")
        made.append((t.train.Checkpoint.from_directory(f"{base}/c{i}"), {"loss": loss, "nested": {"acc": i}}))
    return made


def _result(t: Any, **kwargs: Any) -> Any:
    return t.train.Result(metrics={"loss": 1.0}, checkpoint=None, error=None, path="/tmp/run", **kwargs)


# -- Result, built by a user as Ray's --------------------------------------------------
@program()
def result_built_as_rays(t: Any) -> Any:
    result = _result(t)
    return [result.metrics, result.checkpoint, result.error, result.path, type(result.filesystem).__name__]


@program("0")
def result_config_is_the_metrics_config(t: Any) -> Any:
    return [_result(t).config, t.train.Result({"config": {"a": 1}}, None, None, "/p").config]


@program()
def best_checkpoint_by_metric(t: Any) -> Any:
    result = _result(t, best_checkpoints=_checkpoints(t))
    best = result.get_best_checkpoint("loss", "min")
    worst = result.get_best_checkpoint("loss", "max")
    nested = result.get_best_checkpoint("nested/acc", "max")
    return [os.path.basename(c.path) for c in (best, worst, nested)]


@program()
def best_checkpoint_of_an_unknown_metric(t: Any) -> Any:
    return _result(t, best_checkpoints=_checkpoints(t)).get_best_checkpoint("no_such_metric", "max")


@program()
def best_checkpoint_in_another_mode(t: Any) -> Any:
    return _result(t, best_checkpoints=_checkpoints(t)).get_best_checkpoint("loss", "lowest")


@program()
def best_checkpoint_without_checkpoints(t: Any) -> Any:
    return _result(t).get_best_checkpoint("loss", "min")


_EMPTY_DIR = tempfile.mkdtemp()  # one directory for both sides: the messages name it


@program()
def from_path_of_a_missing_directory(t: Any) -> Any:
    return t.train.Result.from_path(os.path.join(_EMPTY_DIR, "no-such-run"))


@program()
def from_path_of_a_directory_without_a_run(t: Any) -> Any:
    return t.train.Result.from_path(_EMPTY_DIR)


# -- errors, built by a user as Ray's ---------------------------------------------------
@program("1")
def worker_group_error_built_as_rays(t: Any) -> Any:
    error = t.train.WorkerGroupError("rank 1 failed", {1: ValueError("x")})
    return [str(error), sorted(error.worker_failures), isinstance(error, t.train.TrainingFailedError)]


@program("1")
def controller_error_built_as_rays(t: Any) -> Any:
    cause = RuntimeError("the controller died")
    error = t.train.ControllerError(cause)
    return [str(error), error.controller_failure is cause, isinstance(error, t.train.TrainingFailedError)]


# -- configs -------------------------------------------------------------------------
@program("1")
def elastic_scaling_config(t: Any) -> Any:
    c = t.train.ScalingConfig(num_workers=(2, 4), resources_per_worker={"CPU": 2, "memory": 10})
    return [c.min_workers, c.max_workers, c.elasticity_enabled, c.total_resources, c.elastic_resize_monitor_interval_s]


@program("1")
def elastic_bounds_reversed(t: Any) -> Any:
    return t.train.ScalingConfig(num_workers=(3, 2))


@program("1")
def num_workers_of_another_type(t: Any) -> Any:
    return t.train.ScalingConfig(num_workers="4")


@program("1")
def negative_resize_interval(t: Any) -> Any:
    return t.train.ScalingConfig(num_workers=(1, 2), elastic_resize_monitor_interval_s=-1)


@program("1")
def label_selector_per_worker_of_the_wrong_length(t: Any) -> Any:
    return t.train.ScalingConfig(num_workers=3, label_selector=[{"zone": "a"}])


@program("1")
def label_selector_and_tpu_fields(t: Any) -> Any:
    c = t.train.ScalingConfig(num_workers=2, label_selector={"zone": "a"})
    return [c.label_selector, c.use_tpu, c.topology, c.num_tpus_per_worker]


@program()
def per_worker_resources(t: Any) -> Any:
    c = t.train.ScalingConfig(num_workers=3, use_gpu=False, resources_per_worker={"CPU": 2, "memory": 5, "x": 1})
    return [c.num_cpus_per_worker, c.num_gpus_per_worker, c.additional_resources_per_worker]


@program("1")
def total_resources(t: Any) -> Any:  # V1's reserves a CPU for the trainer actor, compat's none (§31)
    return t.train.ScalingConfig(num_workers=3, resources_per_worker={"CPU": 2}).total_resources


@program()
def placement_group_factory_round_trip(t: Any) -> Any:
    pgf = t.train.ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1, "x": 2}).as_placement_group_factory()
    back = t.train.ScalingConfig.from_placement_group_factory(pgf)
    return [pgf.bundles[1:], back.num_workers, back.resources_per_worker]


@program("1")
def preemption_failure_config(t: Any) -> Any:
    c = t.train.FailureConfig(max_failures=2, max_preemption_failures=3, preemption_grace_s=5.0)
    return [c.max_failures, c.max_preemption_failures, c.preemption_grace_s, c.relax_collectives_on_preemption,
            c.controller_failure_limit]  # fmt: skip


@program("0")
def local_dir_is_deprecated(t: Any) -> Any:
    return t.train.RunConfig(local_dir="/tmp/somewhere")


@program("0")
def keep_all_ranks_is_deprecated(t: Any) -> Any:
    return t.train.CheckpointConfig(_checkpoint_keep_all_ranks=True)


@program("0")
def upload_from_workers_is_deprecated(t: Any) -> Any:
    return t.train.CheckpointConfig(_checkpoint_upload_from_workers=True)


# -- a training function's calls made on the driver: raw V2 raises (V1 warns; compat raises, §10)
for _name, _call in {
    "report_on_the_driver": lambda t: t.train.report({"loss": 1.0}),
    "get_checkpoint_on_the_driver": lambda t: t.train.get_checkpoint(),
    "get_context_on_the_driver": lambda t: t.train.get_context(),
    "get_dataset_shard_on_the_driver": lambda t: t.train.get_dataset_shard("train"),
}.items():
    PROGRAMS[_name] = ("1", _call)


# -- COMPAT_STRICT=1 under V2: V1-only config fields raise when the config is made, as raw V2's
def _strict(make: Program) -> Program:
    def run(t: Any) -> Any:
        os.environ["COMPAT_STRICT"] = "1"  # raw Ray reads no such variable
        try:
            return make(t)
        finally:
            del os.environ["COMPAT_STRICT"]

    return run


for _name, _make in {
    "strict_fail_fast": lambda t: t.train.FailureConfig(fail_fast=True),
    "strict_verbose": lambda t: t.train.RunConfig(verbose=2),
    "strict_sync_config": lambda t: t.train.RunConfig(sync_config=t.train.SyncConfig()),
    "strict_trainer_resources": lambda t: t.train.ScalingConfig(trainer_resources={"CPU": 1}),
    "strict_checkpoint_frequency": lambda t: t.train.CheckpointConfig(checkpoint_frequency=2),
    "strict_checkpoint_at_end": lambda t: t.train.CheckpointConfig(checkpoint_at_end=True),
}.items():
    PROGRAMS[_name] = ("1", _strict(_make))


# -- trainers ------------------------------------------------------------------------
@program("0")
def preprocess_datasets_is_deprecated(t: Any) -> Any:
    return t.torch.TorchTrainer(lambda: None).preprocess_datasets()


@program("0")
def v1_trainer_attributes(t: Any) -> Any:
    trainer = t.torch.TorchTrainer(lambda: None)
    return [trainer.starting_checkpoint, type(trainer.get_dataset_config()).__name__]


@program("1")
def v2_trainer_attributes(t: Any) -> Any:
    trainer = t.torch.TorchTrainer(lambda: None)
    return [type(trainer.data_config).__name__, trainer.running_in_local_mode]


def observe(function: Program, t: Any) -> tuple[dict[str, Any], BaseException | None]:
    try:
        return {"value": function(t)}, None
    except Exception as error:
        first = str(error).splitlines()[0] if str(error) else ""
        return {"raised": type(error).__name__, "first_line": first}, error


def _not_in_this_ray(error: BaseException | None) -> bool:
    """Ray raised because this release lacks what the program uses (a later one added it)."""
    text = str(error)
    return (isinstance(error, TypeError) and "unexpected keyword argument" in text) or (
        isinstance(error, AttributeError) and "has no attribute" in text
    )


def main() -> None:
    import ray.train
    import ray.train.torch

    import compat
    import compat.torch

    ray_side = types.SimpleNamespace(train=ray.train, torch=ray.train.torch)
    ours = types.SimpleNamespace(train=compat, torch=compat.torch)
    setting = "1" if V2 else "0"
    out: dict[str, Any] = {}
    only = set(sys.argv[1:])
    for name, (settings, function) in PROGRAMS.items():
        if setting not in settings or (only and name not in only):
            continue
        theirs, their_error = observe(function, ray_side)
        if _not_in_this_ray(their_error):
            continue  # an older Ray without the feature: nothing to hold compat to
        mine, my_error = observe(function, ours)
        if their_error is not None and my_error is not None and isinstance(my_error, type(their_error)):
            mine["raised"] = theirs["raised"]  # a subclass of Ray's class is Ray's class to an except clause
        out[name] = {"ray": theirs, "compat": mine}
    print(json.dumps(out, default=repr))


if __name__ == "__main__":
    importlib.invalidate_caches()
    main()
