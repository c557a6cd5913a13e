"""What each Ray release compat supports has and lacks: a flag per difference, read from the
released wheels (the range compat runs on is :mod:`compat_core.installed`).

compat runs on Ray 2.44 to 2.60 (:mod:`compat_core.installed` holds the range). Ray's public
``ray.train`` API gained names release by release; this module says which release has what
(read from the released wheels) and gives each name from Ray where Ray has it, and compat's
own equivalent where it does not. Everything else in compat imports version-dependent names
from here, so a new Ray release means editing this file.

The facts, by release:

========  ==================================================================================
2.44      V2 engine (opt-in), ``UserCallback.after_report/after_exception``; V2's only
          failure class is ``TrainingFailedError``; a V2 worker reports through its
          ``TrainContext.report``.
2.47      ``RunConfig(worker_runtime_env=...)`` in V2.
2.49      ``WorkerGroupError``/``ControllerError`` (``TrainingFailedError`` is their
          ``Union`` until 2.51, a base class from 2.51); a V2 worker reports through its
          ``TrainFnUtils.report``.
2.50      ``CheckpointUploadMode``, ``get_all_reported_checkpoints``, ``ReportedCheckpoint``;
          ``report(validate_fn=, validate_config=)``; V2's own ``XGBoostConfig`` (V1's before);
          V2's own torch ``get_device``/``get_devices`` (V1's before); V2 picks the torch
          backend of a ``TorchConfig(backend=None)`` (only V2's TorchTrainer did before).
2.51      ``RAY_TRAIN_V2_ENABLED`` defaults to on; V2's torch ``get_device`` answers the local
          device outside a training worker (2.50's raises ``RuntimeError``).
2.52      V2 has its own ``CheckpointConfig`` (V1's before); the V1 form of
          ``LightGBMTrainer`` trains with LightGBM's data-parallel learner (serial before);
          V2's ``Result.from_path`` reads a run (it raises ``NotImplementedError`` before).
2.53      ``CheckpointConsistencyMode``.
2.55      ``ValidationConfig`` on the trainer and ``report(validation=...)`` replace
          ``validate_fn``; ``ReportedCheckpointStatus``.
2.51      ``ray.train.TrainingIterator`` removed.
2.56      ``ValidationTaskConfig.timeout_s``; ``RunConfig(logging_config=LoggingConfig())``;
          ``ray.train.lightgbm.normalize_pandas_for_lightgbm``; the V1 predictors
          (``TorchPredictor``, ``TorchDetectionPredictor``, ``XGBoostPredictor``,
          ``LightGBMPredictor``) removed.
2.58      ``PreemptionError``, ``PreemptionInfo``, ``get_preemption_info``.
2.60      ``NCCLHangError``.
========  ==================================================================================
"""

from __future__ import annotations

from importlib import metadata

from packaging.version import Version

VERSION = Version(metadata.version("ray"))


def since(release: str) -> bool:
    """Whether the installed Ray is ``release`` or newer."""
    return VERSION >= Version(release)


V2_IS_DEFAULT = since("2.51")
"""Ray's own default for an unset ``RAY_TRAIN_V2_ENABLED``."""
REPORTED_CHECKPOINTS = since("2.50")
"""V2 has ``get_all_reported_checkpoints`` and the upload modes."""
LOCAL_MODE = since("2.50")
"""V2's local mode: ``ScalingConfig(num_workers=0)`` runs the training function in the driver."""
CONSISTENCY_MODES = since("2.53")
"""V2's ``get_all_reported_checkpoints`` takes ``consistency_mode`` and ``timeout_s``."""
VALIDATION = since("2.56")
"""V2 validates checkpoints itself, with ``ValidationTaskConfig.timeout_s`` (2.55 lacks it).
Before it, compat validates in its run ledger, as it always does under V1."""
V2_DEVICE_NEEDS_WORKER = since("2.50") and not since("2.51")
"""V2's torch ``get_device``/``get_devices`` raise ``RuntimeError: TrainFnUtils has not been
initialized`` outside a training worker, so Ray Data's ``iter_torch_batches()`` (its
``device="auto"`` asks ``get_device``) fails in a validation task that runs with V2 on."""
UNSCORED_CHECKPOINTS_NEWEST = since("2.49")
"""V1's checkpoint manager appends a checkpoint whose metrics lack ``checkpoint_score_attribute``
(it ranks as the newest); before, it ranks it by a score of -inf, among the worst."""
V2_READS_RUNS = since("2.52")
"""V2's ``Result.from_path`` reads a run's directory; before, it raises ``NotImplementedError``
and compat reads V2's checkpoint manager snapshot itself
(:func:`compat_core.releases.standins.v2_result_from_path`)."""
FAILURE_FAMILIES = since("2.49")
"""V2 raises ``WorkerGroupError`` / ``ControllerError`` rather than one failure class."""
PREEMPTION = since("2.58")
LOGGING_CONFIG = since("2.56")
WORKER_RUNTIME_ENV = since("2.47")
V2_XGBOOST_CONFIG = since("2.50")
"""V2's XGBoostTrainer takes its own ``ray.train.v2.xgboost.config.XGBoostConfig``."""
LIGHTGBM_NORMALIZE = since("2.56")
"""``ray.train.lightgbm.normalize_pandas_for_lightgbm`` exists."""
V1_LIGHTGBM_TRAINER = (
    "ray.train.lightgbm.lightgbm_trainer:LightGBMTrainer" if since("2.46") else "ray.train.lightgbm.v2:LightGBMTrainer"
)
"""V1's LightGBM trainer that takes a training function: before 2.46 ``ray.train.lightgbm``'s
own class has only the legacy ``params=``/``label_column=`` form, and the function form is
``ray.train.lightgbm.v2.LightGBMTrainer``."""
LIGHTGBM_DATA_PARALLEL = since("2.52")
"""Ray's own training function for the V1 form of ``LightGBMTrainer`` sets
``tree_learner="data_parallel"`` and ``pre_partition=True``; before, it leaves LightGBM's
defaults (the serial learner), and compat's V1 form trains as that release's Ray does."""
PANDAS_3 = since("2.55")
"""Ray Data's ``from_pandas`` works with pandas 3 (before, it raises ``AttributeError: ...
SettingWithCopyWarning``; use ``pandas<3`` with those releases)."""

RETIRED_NAMES: dict[str, tuple[str, ...]] = {
    "ray.train": ("TrainingIterator",),
    "ray.train.torch": ("TorchPredictor", "TorchDetectionPredictor"),
    "ray.train.xgboost": ("XGBoostPredictor",),
    "ray.train.lightgbm": ("LightGBMPredictor",),
}
"""Names older releases' modules export and newer ones removed; compat passes them through
where the installed Ray still has them, so it stays a drop-in there."""
