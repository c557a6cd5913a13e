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
    "compat_core.ledger.journal": "compat_core.run.ledger.journal",
    "compat_core.ledger.records": "compat_core.run.ledger.records",
    "compat_core.ledger.run": "compat_core.run.ledger.run",
    "compat_core.ledger.validating": "compat_core.run.ledger.validating",
    "compat_core.ledger.votes": "compat_core.run.ledger.votes",
    "compat_core.releases": "compat_core.releases.standins",
}
"""Old module → new module, for every module of compat_core that moved when the core was grouped
by job (docs/architecture.md)."""


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
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
