"""The run ledger: every worker's reports, gathered in one place while a run goes on.

Workers send each ``report()`` here (written to the socket of compat_core.run.channel, or as
fire-and-forget actor calls). The ledger gives the driver what Ray itself drops (other
ranks' metrics, rank 0's return value under V1, V1-only usage seen on workers) and plays
the part of V2's controller: it calls ``UserCallback.after_report`` once per complete round
and ``after_exception`` once per failed attempt, and runs async validations one at a time
where the engine has none.

The records themselves are plain values below the run (:mod:`compat_core.semantics.records`),
journaled to disk by :mod:`compat_core.files.journal`. The ledger's parts, each with one lock:
:mod:`.store` (store, de-duplicate, order),
:mod:`.delivery` (rounds to callbacks across attempts), :mod:`.validating`, :mod:`.votes`
(the v2 free-round vote), :mod:`.checkpoints` (V1's numbering, reported checkpoints) and the
failures in :mod:`.run`, which puts them together as :class:`RunLedger`; :mod:`.host` is the
Ray actor that holds a driver's run ledgers. Everything but the host is plain code, tested
without a cluster.
"""

from compat_core.run.ledger.host import LedgerClient, ledger_concurrency, open_ledger
from compat_core.run.ledger.run import RunLedger
from compat_core.run.ledger.validating import ValidationRunner, ray_validation_runner, task_options

__all__ = [
    "LedgerClient",
    "RunLedger",
    "ValidationRunner",
    "ledger_concurrency",
    "open_ledger",
    "ray_validation_runner",
    "task_options",
]
