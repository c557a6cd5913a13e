"""Reading back what an earlier compat pickled: the restore state (``compat_trainer.pkl``) and
the run ledger's journal name compat's classes by module, and a release that moved a module
would otherwise leave them unreadable (``ModuleNotFoundError``) after an upgrade between a
run's start and its restore. :data:`MOVED` maps each old module to where it went."""

from __future__ import annotations

import io
import pickle
from typing import Any

MOVED = {
    "compat_core.model": "compat_core.semantics.rounds",
    "compat_core.semantics": "compat_core.semantics.observed",
    "compat_core.v1_logs": "compat_core.semantics.v1_logs",
    "compat_core.result": "compat_core.semantics.result",
    "compat_core.reads": "compat_core.semantics.reads",
    "compat_core.stored": "compat_core.semantics.stored",
    "compat_core.restore": "compat_core.semantics.restore",
    "compat_core.engine": "compat_core.run.engine",
    "compat_core.worker": "compat_core.run.worker",
    "compat_core.channel": "compat_core.run.channel",
    "compat_core.ledger": "compat_core.run.ledger",
    "compat_core.ledger.checkpoints": "compat_core.run.ledger.checkpoints",
    "compat_core.ledger.delivery": "compat_core.run.ledger.delivery",
    "compat_core.ledger.host": "compat_core.run.ledger.host",
    "compat_core.ledger.journal": "compat_core.files.journal",
    "compat_core.ledger.records": "compat_core.semantics.records",
    "compat_core.ledger.run": "compat_core.run.ledger.run",
    "compat_core.ledger.validating": "compat_core.run.ledger.validating",
    "compat_core.ledger.votes": "compat_core.run.ledger.votes",
    "compat_core.releases": "compat_core.releases.standins",
    # The root's modules grouped by job (2026-11-29): a restore state holds the trainer's
    # framework and its trial's RunStorage, a journal the usages its workers recorded.
    "compat_core.v1_only": "compat_core.migration.v1_only",
    "compat_core.usage": "compat_core.migration.usage",
    "compat_core.where": "compat_core.migration.where",
    "compat_core.frameworks": "compat_core.integration.frameworks",
    "compat_core.tune": "compat_core.run.tune",
    "compat_core.validation": "compat_core.integration.validation",
    "compat_core.patch": "compat_core.integration.patch",
    "compat_core.storage": "compat_core.files.storage",
    "compat_core.private": "compat_core.files.private",
    "compat_core.pickled": "compat_core.files.pickled",
    # The core's packages made to depend one way (2026-12-02, docs/architecture.md "Layers").
    "compat_core.integration.tune": "compat_core.run.tune",
    "compat_core.run.ledger.journal": "compat_core.files.journal",
    "compat_core.run.ledger.records": "compat_core.semantics.records",  # the live store: .store
}
"""Old module → new module, for every module of compat_core that moved when the core was grouped
by job (docs/architecture.md)."""
MOVED_CLASSES = {
    ("compat._trainer", "TorchTrainer"): ("compat.torch", "TorchTrainer"),
    ("compat._trainer", "_TrialUsages"): ("compat._bookkeeping", "TrialUsages"),
}
"""Old (module, name) → new, for a class that moved on its own: the torch trainer is defined in
``compat.torch`` since it subclasses Ray's (which imports torch; ``import compat`` does not); a
Tune trial's usage sink, journaled by its run's ledger, in ``compat._bookkeeping`` since the
trainer's bookkeeping left ``compat._trainer``."""


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        module, name = MOVED_CLASSES.get((module, name), (module, name))
        module = MOVED.get(module, module)
        try:
            return super().find_class(module, name)
        except AttributeError:
            if module != "ray.train":
                raise
            # V2's class, pickled as ``ray.train.<Name>`` by a process whose ``ray.train`` is V2's
            # (the ledger's host runs with the cluster's setting), read where it is V1's.
            from compat_core.releases.standins import expose_v2_names

            expose_v2_names()
            return super().find_class(module, name)


def loads(data: bytes) -> Any:
    """``cloudpickle.loads(data)``, finding a class of a moved module where it is now, and V2's
    classes pickled as ``ray.train.<Name>`` where ``ray.train`` is V1's."""
    return _Unpickler(io.BytesIO(data)).load()


# What a stored value may be rebuilt from without trusting the storage: builtin values and
# containers, the standard library's plain value types, numpy's arrays, scalars and dtypes. Each
# is harmless whatever arguments a crafted pickle gives it (none imports, executes, opens or
# reaches an attribute by name), as torch.load(weights_only=True) allows its own list.
SAFE_GLOBALS = frozenset(
    {
        ("builtins", "complex"),
        ("builtins", "bytearray"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "slice"),
        ("builtins", "range"),
        ("builtins", "list"),
        ("builtins", "dict"),
        ("builtins", "tuple"),
        ("builtins", "int"),
        ("builtins", "float"),
        ("builtins", "bool"),
        ("builtins", "str"),
        ("builtins", "bytes"),
        ("collections", "OrderedDict"),
        ("datetime", "datetime"),
        ("datetime", "date"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("decimal", "Decimal"),
        ("fractions", "Fraction"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        # and numpy.dtypes.<X>DType, numpy 2's dtype classes (below)
    }
)


class RefusedGlobalError(pickle.UnpicklingError):
    """A stored value needs a class or function that :func:`safe_loads` does not load:
    ``.name`` is its ``module.name``."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is not loaded from storage without trusting it")
        self.name = name


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in SAFE_GLOBALS or (module == "numpy.dtypes" and name.endswith("DType")):
            return super().find_class(module, name)
        raise RefusedGlobalError(f"{module}.{name}")


def safe_loads(data: bytes) -> Any:
    """Unpickle ``data`` rebuilding only :data:`SAFE_GLOBALS` (values, containers, numpy
    arrays): nothing it reads can run code. Any other class or function raises
    :class:`RefusedGlobalError` naming it."""
    return _SafeUnpickler(io.BytesIO(data)).load()


class StoredError(RuntimeError):
    """A failed run's error as ``Result.from_path`` gives it without unpickling the run's
    ``error.pkl`` (loading it would run code the storage's writers chose): its message is the
    run's ``error.txt``. ``Result.from_path(path, trust_stored_objects=True)`` loads the error
    itself, as raw Ray's ``from_path`` does."""


class CorruptStoredDataWarning(UserWarning):
    """Part of what compat stored could not be read (with a run, or in a run ledger's journal): the
    warning names the file and what it cost (a report, a value, the validations); the rest was
    read. ``compat.CorruptStoredDataWarning``."""


class StoredValue:
    """Stands, in what compat reads back from a run's storage, for a value whose class
    :func:`safe_loads` does not load (``type_name``): loading it would run code the storage's
    writers chose. ``Result.from_path(path, trust_stored_objects=True)`` loads it, trusting the
    storage as ``Trainer.restore`` does."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return (
            f"<StoredValue of {self.type_name}: not unpickled; "
            "Result.from_path(..., trust_stored_objects=True) loads it>"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoredValue) and other.type_name == self.type_name

    def __hash__(self) -> int:
        return hash(self.type_name)

    def __reduce__(self) -> Any:
        return (StoredValue, (self.type_name,))


class UnreadableValue:
    """Stands, in what compat reads back from a run's storage, for a value whose stored bytes are
    corrupt (``reason``: what the unpickler said); the rest of the run is read."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<UnreadableValue: {self.reason}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnreadableValue) and other.reason == self.reason

    def __hash__(self) -> int:
        return hash(self.reason)

    def __reduce__(self) -> Any:
        return (UnreadableValue, (self.reason,))


def load_stored(data: bytes, trusted: bool) -> Any:
    """A value compat stored with a run: ``trusted``, as :func:`loads`; else by :func:`safe_loads`,
    a :class:`StoredValue` naming the class it would have needed to load anything more."""
    if trusted:
        return loads(data)
    try:
        return safe_loads(data)
    except RefusedGlobalError as refused:
        return StoredValue(refused.name)
