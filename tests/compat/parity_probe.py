"""What of the installed Ray's public ``ray.train`` API compat lacks, under the setting of
``RAY_TRAIN_V2_ENABLED`` this process runs with (Ray picks its exports at first import).

Run as a script (``tests/compat/test_parity.py`` runs it once per setting); prints one JSON
object: ``{"missing": [...], "stale": [...]}``. Everything is computed from the installed Ray:

* every name in each module's ``__all__``;
* every parameter Ray's functions and constructors accept (compat's callable takes it by
  name, or through a ``**kwargs`` typed ``Unpack[SomeTypedDict]`` that declares it, or
  declares Ray's own signature with ``__signature__`` because it forwards to Ray);
* every public attribute, property and method of Ray's classes, and of the instances Ray's
  constructors make with their defaults (dataclass fields, attributes set in ``__init__``);
* every public class: compat's is Ray's or a subclass of it, so ``isinstance(x,
  ray.train.<Name>)`` holds for compat's objects and Ray takes them where it takes its own.

``EXCLUDED`` is the reviewed list of what compat leaves out on purpose, each with its reason;
an exclusion compat has since gained is reported as ``stale``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import typing
from typing import Any

PAIRS = [
    ("ray.train", "compat"),
    ("ray.train.torch", "compat.torch"),
    ("ray.train.xgboost", "compat.xgboost"),
    ("ray.train.lightgbm", "compat.lightgbm"),
    ("ray.train.lightning", "compat.lightning"),
    ("ray.train.huggingface.transformers", "compat.huggingface.transformers"),
    ("ray.train.tensorflow", "compat.tensorflow"),
]
PAIRS_BY_COMPAT = [(ours, theirs) for theirs, ours in PAIRS]

IDENTITY = "is Ray's class or a subclass of it"
_RUN_CONTEXT = (
    "V2's internal TrainRunContext, made at construction for V2's controller; compat makes Ray's trainer at fit()"
)
EXCLUDED = {
    ("compat.torch", "TorchTrainer", "train_run_context"): _RUN_CONTEXT,
    ("compat.xgboost", "XGBoostTrainer", "train_run_context"): _RUN_CONTEXT,
    ("compat.lightgbm", "LightGBMTrainer", "train_run_context"): _RUN_CONTEXT,
    ("compat.tensorflow", "TensorflowTrainer", "train_run_context"): _RUN_CONTEXT,
}

# Ray's classes whose default instances are compared too (attributes set in __init__).
INSTANCES: dict[str, Any] = {
    "Result": lambda m: m.Result(metrics={}, checkpoint=None, error=None, path="/tmp"),
    "RunConfig": lambda m: m.RunConfig(),
    "ScalingConfig": lambda m: m.ScalingConfig(),
    "CheckpointConfig": lambda m: m.CheckpointConfig(),
    "FailureConfig": lambda m: m.FailureConfig(),
    "TorchTrainer": lambda m: m.TorchTrainer(lambda: None),
    "XGBoostTrainer": lambda m: m.XGBoostTrainer(lambda: None),
    "LightGBMTrainer": lambda m: m.LightGBMTrainer(lambda: None),
    "TensorflowTrainer": lambda m: m.TensorflowTrainer(lambda: None),
}


def parameters(obj: Any) -> dict[str, inspect.Parameter] | None:
    try:
        return dict(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return None


def accepted(obj: Any) -> set[str] | None:
    """The keyword names ``obj`` takes; None when it takes any (an untyped ``**kwargs``)."""
    found = parameters(obj)
    if found is None:
        return None
    names = {n for n, p in found.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    for p in found.values():
        if p.kind is not p.VAR_KEYWORD:
            continue
        typed = _unpacked(obj.__init__ if inspect.isclass(obj) else obj, p.annotation)
        if typed is None:
            return None
        names |= set(typing.get_type_hints(typed))
    return names


def _unpacked(function: Any, annotation: Any) -> Any:
    """The TypedDict of a ``**kwargs: Unpack[TypedDict]`` (a string under postponed annotations)."""
    if typing.get_origin(annotation) is typing.Unpack:
        return typing.get_args(annotation)[0]
    if isinstance(annotation, str) and annotation.startswith("Unpack[") and annotation.endswith("]"):
        return getattr(inspect.getmodule(function), annotation[len("Unpack[") : -1], None)
    return None


def attributes(obj: Any) -> set[str]:
    found = {a for a in dir(obj) if not a.startswith("_")}
    for klass in inspect.getmro(obj if inspect.isclass(obj) else type(obj)):
        found |= {a for a in getattr(klass, "__annotations__", {}) if not a.startswith("_")}
        found |= {a for a in getattr(klass, "__dataclass_fields__", {}) if not a.startswith("_")}
    if not inspect.isclass(obj):
        found |= {a for a in vars(obj) if not a.startswith("_")}
    return found


def _made(make: Any, module: Any) -> Any:
    """Ray's default instance; None where this release's constructor needs more (Ray 2.44's V1
    tree trainers take no training function)."""
    try:
        return make(module)
    except Exception:
        return None


def compare(ray_name: str, ours: str) -> list[tuple[str, str, str]]:
    """What of ``ray_name`` the module ``ours`` lacks: ``(module, name, what)``, ``what``
    empty for the name itself, ``"x="`` for a parameter, ``"x"`` for an attribute."""
    ray_module = importlib.import_module(ray_name)
    mine = importlib.import_module(ours)
    missing: list[tuple[str, str, str]] = []
    for name in ray_module.__all__:
        theirs, our = getattr(ray_module, name), getattr(mine, name, None)
        if our is None:
            missing.append((ours, name, ""))
            continue
        their_params = parameters(theirs)
        if their_params is not None and callable(our):
            takes = accepted(our)
            for p in their_params.values():
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or takes is None:
                    continue
                if p.name not in takes:
                    missing.append((ours, name, f"{p.name}="))
        if inspect.isclass(theirs) and not is_rays(our, theirs):
            missing.append((ours, name, IDENTITY))
        if inspect.isclass(theirs):
            have = attributes(our)
            wanted = attributes(theirs)
            make = INSTANCES.get(name)
            theirs_made = _made(make, ray_module) if make is not None else None
            if make is not None and theirs_made is not None:
                wanted |= attributes(theirs_made)
                try:
                    have |= attributes(make(mine))
                except Exception as error:  # Ray's constructor call does not work on compat's class
                    missing.append((ours, name, f"construct as Ray's: {type(error).__name__}: {error}"))
            missing += [(ours, name, a) for a in sorted(wanted - have)]
    return missing


def is_rays(our: Any, theirs: type) -> bool:
    """``our`` is Ray's class ``theirs`` or a subclass of it (a protocol: Ray's own)."""
    if our is theirs:
        return True
    try:
        return inspect.isclass(our) and issubclass(our, theirs)
    except TypeError:  # a typing.Protocol that is not runtime-checkable
        return False


def shown(module: str, name: str, what: str) -> str:
    if what == IDENTITY:
        return f"{module}.{name}: not Ray's class or a subclass of it"
    if what.startswith("construct"):
        return f"{module}.{name}: {what}"
    return f"{module}.{name}" + (f"({what})" if what.endswith("=") else f".{what}" if what else "")


def compat_has(module: str, name: str, attr: str) -> bool:
    try:
        our = getattr(importlib.import_module(module), name, None)
    except ImportError:  # the framework is not installed here (compat.tensorflow needs TensorFlow)
        return False
    if our is None:
        return False
    if attr == IDENTITY:
        ray_module = dict(PAIRS_BY_COMPAT)[module]
        return is_rays(our, getattr(importlib.import_module(ray_module), name))
    make = INSTANCES.get(name)
    if attr in attributes(our):
        return True
    try:
        return make is not None and attr in attributes(make(importlib.import_module(module)))
    except Exception:
        return False


def main() -> None:
    missing: list[tuple[str, str, str]] = []
    for ray_name, ours in PAIRS:
        try:
            importlib.import_module(ray_name)
        except ImportError:
            continue  # the framework is not installed here
        missing += compare(ray_name, ours)
    stale = [shown(*key) for key in EXCLUDED if compat_has(*key)]
    print(json.dumps({"missing": [shown(*m) for m in missing if m not in EXCLUDED], "stale": stale}))


if __name__ == "__main__":
    main()
