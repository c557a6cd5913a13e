"""The catalogue of V1-only behaviours compat counts: each kind's code, what it is, what replaces
it under V2, its severity on raw V2 and the codemod rule that finds it; and the texts of their
warnings. ``compat_core.migration.usage`` warns, counts and records them; ``python -m compat readiness``
ranks them. A new V1-only behaviour is a ``Kind`` here and a ``usage.relied_on(kind, ...)``
where it happens."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from compat_core.messages import GUIDE


@dataclass(frozen=True)
class Kind:
    """A V1-only behaviour: what it is, what replaces it under V2, what it does to a program
    on raw V2 (the codemod's severities, worst first: ``breaks`` raises, ``silent`` runs with
    other results, ``warns`` only warns) and the codemod rule that finds or rewrites it."""

    code: str
    what: str
    instead: str
    severity: str = "breaks"
    rule: str | None = None


SEVERITY_ORDER = ("breaks", "silent", "warns", "fix")  # migrate.severity.SEVERITIES (a test holds them equal)


_KINDS = [
    Kind(
        "free-floating-report",
        "report() without a checkpoint: V2 keeps no free-floating metrics",
        "attach the metrics to a checkpoint (report(metrics, checkpoint=...)), read every "
        "worker's metrics in UserCallback.after_report, or opt in to "
        "RunConfig(keep_v1_logs=True) while migrating",
        severity="silent",
        rule="RTM101",
    ),
    Kind(
        "session-api",
        "the V1 session API (compat.session.* / ray.air.session.*)",
        "use compat.report / compat.get_checkpoint / compat.get_dataset_shard and "
        "compat.get_context().get_world_rank() and friends (`python -m migrate` rewrites this)",
        severity="silent",
        rule="RTM002",
    ),
    Kind(
        "tune-callback",
        "a Ray Tune callback in RunConfig(callbacks=...): raw V2 rejects it (compat keeps feeding it on the driver)",
        "subclass compat.UserCallback and implement after_report(run_context, metrics, checkpoint), "
        "or log to your tracker from the training function",
        severity="breaks",
        rule="RTM106",
    ),
    Kind(
        "tuner-with-trainer",
        "a trainer passed to tune.Tuner / tune.run: raw V2's trainers are not Tune trainables "
        "(compat's are, in both modes, so the sweep breaks once the trainer's module is on ray.train)",
        "run the trainer inside a function trainable (def train_driver(config): "
        "TorchTrainer(..., train_loop_config=config, run_config=RunConfig(callbacks=[TuneReportCallback()])).fit()) "
        "and pass that function to the Tuner (ray.tune.integration.ray_train.TuneReportCallback)",
        severity="breaks",
        rule="RTM117",
    ),
    Kind(
        "trainer-resources",
        "ScalingConfig(trainer_resources=...): V2 has no trainer actor to size",
        "remove it; V2's controller reserves no CPU",
        severity="breaks",
        rule="RTM107",
    ),
    Kind(
        "sync-config",
        "RunConfig(sync_config=...): V2 always syncs to storage_path",
        "remove it and set RunConfig(storage_path=...)",
        severity="breaks",
        rule="RTM108",
    ),
    Kind(
        "tune-run-option",
        "RunConfig(stop/verbose/progress_reporter/log_to_file): Tune options V2 does not have",
        "remove them; stop training from inside the training function and log with "
        "the logging module or an experiment tracker",
        severity="breaks",
        rule="RTM108",
    ),
    Kind(
        "fail-fast",
        "FailureConfig(fail_fast=...): V2 has no fail_fast",
        "remove it; FailureConfig(max_failures=0) already stops at the first failure",
        severity="breaks",
        rule="RTM109",
    ),
    Kind(
        "checkpoint-frequency",
        "CheckpointConfig(checkpoint_frequency/checkpoint_at_end): V2 does not drive checkpoints",
        "report a checkpoint from the training function when you want one",
        severity="breaks",
        rule="RTM110",
    ),
    Kind(
        "trial-api",
        "get_context().get_trial_name/get_trial_id/get_trial_dir/get_trial_resources",
        "use get_context().get_experiment_name() and get_context().get_storage()",
        severity="breaks",
        rule="RTM111",
    ),
    Kind(
        "rerun-same-name",
        "re-running with the RunConfig(name, storage_path) of an earlier run: V1 starts a "
        "fresh trial, V2 resumes the stored run (its checkpoints come back from get_checkpoint())",
        "give each run its own name (e.g. with a timestamp) for a fresh start, or keep the "
        "name and load get_checkpoint() on purpose to resume",
        severity="silent",
    ),
    Kind(
        "resume-from-checkpoint",
        "Trainer(resume_from_checkpoint=... / metadata=...): V2 rejects them (compat carries "
        "resume_from_checkpoint: the first attempt's get_checkpoint() returns it)",
        "pass the checkpoint in train_loop_config and load it in the training function; "
        "V2 resumes a run automatically when RunConfig(name, storage_path) are reused",
        severity="breaks",
        rule="RTM113",
    ),
    Kind(
        "restore",
        "Trainer.restore(path) / Trainer.can_restore(path): V2 has no job-level restore "
        "(compat restores the run: it resumes from its latest checkpoint)",
        "run the same trainer again with the same RunConfig(name, storage_path): V2 resumes "
        "the stored run from its latest checkpoint (get_checkpoint())",
        severity="breaks",
        rule="RTM112",
    ),
    Kind(
        "metrics-dataframe",
        "reading result.metrics_dataframe after fit(): V2 builds it from the kept checkpoints only "
        "(one row each, none of V1's auto-filled columns, nested metrics as one column of dicts)",
        "read every report from result.worker_metrics_dataframe, or in UserCallback.after_report; "
        "attach the metrics you analyse to checkpoints (and keep enough of them: "
        "CheckpointConfig(num_to_keep)); flatten nested metrics before reporting them",
        severity="silent",
        rule="RTM102",
    ),
    Kind(
        "v1-result-keys",
        "reading a key V1 adds to every report (training_iteration, timestamp, time_total_s, ...) "
        "from result.metrics after fit(): V2's result.metrics has only the reported keys",
        "report the value yourself (e.g. report({'epoch': epoch, ...})) and read that key, or "
        "read every report's own keys from result.worker_metrics_dataframe",
        severity="breaks",
        rule="RTM121",
    ),
    Kind(
        "torch-amp",
        "train.torch.accelerate / prepare_optimizer / backward (Ray's mixed-precision helpers): "
        "V2 raises DeprecationWarning on them",
        "call loss.backward() and use the optimizer as is; for mixed precision use "
        "torch.autocast with torch.amp.GradScaler in the training function",
        severity="breaks",
        rule="RTM124",
    ),
    Kind(
        "tree-get-model",
        "XGBoostTrainer.get_model / LightGBMTrainer.get_model (the V1 tree trainers' classmethod): "
        "removed in V2, where it raises DeprecationWarning",
        "load the booster with the report callback's get_model: "
        "ray.train.xgboost.RayTrainReportCallback.get_model(checkpoint) "
        "(LightGBM: ray.train.lightgbm.RayTrainReportCallback.get_model(checkpoint))",
        severity="breaks",
    ),
    Kind(
        "tune-trainable-train-api",
        "compat.report / get_checkpoint / get_context inside a Ray Tune function trainable "
        "(not a trainer's training function): raw V2's ray.train functions raise there",
        "call ray.tune.report / ray.tune.get_checkpoint / ray.tune.get_context in a Tune function "
        "trainable (`python -m migrate` rewrites ray.train's: RTM005)",
        severity="breaks",
        rule="RTM005",
    ),
]
KINDS: dict[str, Kind] = {k.code: k for k in _KINDS}


REPORT_FOOTER = "[breaks]: raw V2 raises on it; [silent]: raw V2 runs it with other results (docs/rules.md)."


def report_lines(items: Iterable[Any], where: Callable[[Any], str] = lambda item: "") -> list[str]:
    """A migration report's two lines per behaviour, worst first: ``items`` have ``kind``,
    ``severity``, ``count``, ``first_site``, ``rule`` and ``advice`` (a run's usages, a
    readiness record's behaviours); ``where(item)`` adds to the count ("in 2 of 3 trials")."""
    lines = []
    for item in sorted(items, key=lambda i: (SEVERITY_ORDER.index(i.severity), i.kind)):
        rule = f"; python -m migrate: {item.rule}" if item.rule else ""
        lines.append(f"  {item.kind} [{item.severity}]: {item.count}x{where(item)}, first at {item.first_site}{rule}")
        lines.append(f"    {item.advice}")
    return lines


def message(code: str, detail: str = "") -> str:
    """The warning (or, under ``strict``, the error) for a use of the V1-only behaviour ``code``."""
    kind = KINDS[code]
    extra = f" ({detail})" if detail else ""
    return f"[{code}] {kind.what}{extra}. Instead: {kind.instead}. Migration guide: {GUIDE}"


def dropped_by_v2_engine(code: str, detail: str = "") -> str:
    """The warning for a V1-only option V2's engine has no place for (V1 semantics on it)."""
    kind = KINDS[code]
    extra = f" ({detail})" if detail else ""
    return (
        f"[{code}] {kind.what}{extra}. Ignored in this run: compat's v1 backend runs on Ray's V2 "
        f"engine (COMPAT_V1_ENGINE=v2, or a Ray without V1's engine), which has no place for it. "
        f"Instead: {kind.instead}; or set COMPAT_V1_ENGINE=v1 while Ray still ships V1's engine."
    )
