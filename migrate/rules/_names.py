"""What a rewriting rule's two forms share: the fast form on the ``ast`` index (in the rule's
module) and the libcst form (``migrate/rules/_cst/``) both import these name tests and tables
from here, so neither form imports the other (the libcst forms refer to their rule class only
for typing)."""

from __future__ import annotations

import re

from migrate import _imports
from migrate._index import Index
from migrate.rules._flags import is_report
from migrate.tables import (
    AIR_MODULES,
    AIR_TO_TRAIN,
    COMPAT_MODULES,
    COMPAT_NAMES,
    SESSION_FUNCTIONS,
    SESSION_MODULES,
)

# --- RTM001 air imports
STRING_PATH = re.compile(r"[\"']ray\.air(?:\.\w+)?\.\w+[\"']")


def air_name(qualified: set[str]) -> str | None:
    return _imports.member(qualified, AIR_MODULES, AIR_TO_TRAIN)


def string_path(value: str) -> str | None:
    """``ray.air[.module].Name`` with a ray.train home -> ``ray.train.<new name>``."""
    module, _, name = value.rpartition(".")
    if module in AIR_MODULES and name in AIR_TO_TRAIN:
        return f"ray.train.{AIR_TO_TRAIN[name]}"
    return None


# --- RTM002 session calls
Stack = tuple[int, ...]  # ids of the enclosing function definitions


def session_function(names: set[str]) -> str | None:
    return _imports.member(names, SESSION_MODULES, SESSION_FUNCTIONS)


# --- RTM003 report's checkpoint keyword
def is_any_report(names: set[str] | frozenset[str]) -> bool:
    """Ray Train's report, and Ray Tune's (whose checkpoint is keyword-only)."""
    return is_report(names) or "ray.tune.report" in names


# --- RTM009 report's keyword metrics
# report()'s own parameters, in any Ray release; every other keyword is a metric of the legacy form.
REPORT_KEYWORDS = frozenset(
    {
        "metrics",
        "checkpoint",
        "checkpoint_dir_name",
        "checkpoint_upload_mode",
        "delete_local_checkpoint_after_upload",
        "checkpoint_upload_fn",
        "validation",
        "validate_fn",
        "validate_config",
    }
)


# --- RTM004 compat target
def compat_path(qualified: str) -> str | None:
    module, _, name = qualified.rpartition(".")
    target = COMPAT_MODULES.get(module)
    return f"{target[0]}.{name}" if target is not None and name in target[1] else None


# --- RTM005 Tune trainable API
# ray.train names used inside a Tune function trainable -> their ray.tune names.
TRAIN_TO_TUNE = {
    "ray.train.report": "report",
    "ray.train.get_checkpoint": "get_checkpoint",
    "ray.train.get_context": "get_context",
    "ray.train.Checkpoint": "Checkpoint",
    "ray.air.Checkpoint": "Checkpoint",
    "ray.air.checkpoint.Checkpoint": "Checkpoint",
}

# Config classes a Tuner must get from ray.tune (V2's ray.train.RunConfig breaks a Tuner).
TUNER_CONFIGS = {
    f"{module}.{name}": name
    for module in ("ray.train", "ray.air", "ray.air.config")
    for name in ("RunConfig", "CheckpointConfig", "FailureConfig")
}
PRUNED_MODULES = frozenset({"ray.train", "ray.air", "ray.air.config", "ray.air.checkpoint"})

# --- RTM006 unused V1 imports
V1_MODULES = ("ray.air", "ray.train.session", "ray.train._internal.session")


def is_v1(qualified: str) -> bool:
    return any(qualified == m or qualified.startswith(m + ".") for m in V1_MODULES)


def exported(index: Index) -> set[str]:
    """The module's re-exported names, as :func:`migrate._imports.exported` reads them."""
    return _imports.exported(index.tree, index.text)


# --- RTM007 native target
# compat name -> ray.train name (V2). What is not here is compat's own (RTM119 flags it).
NATIVE = {name: name for name in COMPAT_NAMES - {"session", "torch"}} | {
    "TrainContext": "TrainContext",
    "ReportedCheckpoint": "ReportedCheckpoint",
    "TrainingFailedError": "TrainingFailedError",
    "WorkerGroupFailedError": "WorkerGroupError",
    "ControllerFailedError": "ControllerError",
}
# compat's framework modules -> (the ray.train module they re-export, the names they take over):
# ``from compat.lightning import RayDDPStrategy`` is ``ray.train.lightning``'s own name.
NATIVE_MODULES: dict[str, tuple[str, frozenset[str]]] = {
    compat: (ray, names) for ray, (compat, names) in COMPAT_MODULES.items() if compat != "compat"
}
