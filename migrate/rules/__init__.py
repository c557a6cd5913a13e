"""Every rule, in the order they run. The order is part of the behaviour:

1. Flag rules (RTM1xx) see the original source, so their line numbers are the
   user's file and they see old forms (``session.report``) before those are rewritten.
2. RTM006 (unused V1 imports) first among the rewriting rules: an unused ``ray.air``
   import is removed, not rewritten. RTM001 (air imports) before RTM002: a mixed ``from ray.air import session,
   ScalingConfig`` is split first, so RTM002 only ever removes whole session imports.
3. RTM002 (session calls) before RTM005 (ray.train -> ray.tune in Tune function
   trainables) before RTM009 (keyword metrics -> a dict) and RTM003: rewritten
   ``session.report`` calls then get their metrics dict and checkpoint keyword too.
4. RTM004 (compat target) after every rule that produces ``ray.train`` code.
5. RTM100 (leftovers) last: it reports what every other rule left behind; then RTM900
   (unused ``noqa`` codes), over every rule's findings.
"""

from __future__ import annotations

from migrate.rules._base import Context, Diagnostic, Rule
from migrate.rules.air_imports import AirImports
from migrate.rules.checkpoint_frequency import CheckpointFrequency
from migrate.rules.checkpoint_methods import CheckpointMethods
from migrate.rules.checkpoint_model_methods import CheckpointModelMethods
from migrate.rules.compat_only import CompatOnly
from migrate.rules.compat_target import CompatTarget
from migrate.rules.context_metadata import ContextMetadata
from migrate.rules.dataset_config import DatasetConfigUse
from migrate.rules.deprecated_module_paths import DeprecatedModulePaths
from migrate.rules.fail_fast import FailFast
from migrate.rules.framework_checkpoints import FrameworkCheckpoints
from migrate.rules.free_floating_report import FreeFloatingReport
from migrate.rules.leftover_old_api import LeftoverOldApi
from migrate.rules.log_dir import LogDir
from migrate.rules.metrics_dataframe import MetricsDataframe
from migrate.rules.native_target import NativeTarget
from migrate.rules.old_validation_form import OldValidationForm
from migrate.rules.removed_trainers import RemovedTrainers
from migrate.rules.report_checkpoint_keyword import ReportCheckpointKeyword
from migrate.rules.report_keyword_metrics import ReportKeywordMetrics
from migrate.rules.resume_from_checkpoint import ResumeFromCheckpoint
from migrate.rules.session_calls import SessionCalls
from migrate.rules.torch_amp import TorchAmp
from migrate.rules.trainer_preprocessor import TrainerPreprocessor
from migrate.rules.trainer_resources import TrainerResources
from migrate.rules.trainer_restore import TrainerRestore
from migrate.rules.tree_trainer_v1_form import TreeTrainerV1Form
from migrate.rules.trial_api import TrialApi
from migrate.rules.tune_callbacks import TuneCallbacks
from migrate.rules.tune_report import TuneReport
from migrate.rules.tune_run_checkpoint_options import TuneRunCheckpointOptions
from migrate.rules.tune_run_options import TuneRunOptions
from migrate.rules.tune_trainable_api import TuneTrainableApi
from migrate.rules.tuner_with_trainer import TunerWithTrainer
from migrate.rules.undecided_trainable import UndecidedTrainable
from migrate.rules.unused_noqa import UnusedNoqa
from migrate.rules.unused_v1_imports import UnusedV1Imports
from migrate.rules.v1_era_api import V1EraApi
from migrate.rules.v1_failure_class import V1FailureClass
from migrate.rules.v1_result_keys import V1ResultKeys

RULES: tuple[type[Rule], ...] = (
    FreeFloatingReport,
    MetricsDataframe,
    CheckpointMethods,
    FrameworkCheckpoints,
    LogDir,
    TuneCallbacks,
    TrainerResources,
    TuneRunOptions,
    TuneRunCheckpointOptions,
    FailFast,
    CheckpointFrequency,
    TrialApi,
    TrainerRestore,
    ResumeFromCheckpoint,
    TuneReport,
    OldValidationForm,
    UndecidedTrainable,
    TunerWithTrainer,
    V1FailureClass,
    CompatOnly,
    ContextMetadata,
    V1ResultKeys,
    TreeTrainerV1Form,
    RemovedTrainers,
    V1EraApi,
    TorchAmp,
    DatasetConfigUse,
    TrainerPreprocessor,
    CheckpointModelMethods,
    UnusedV1Imports,
    DeprecatedModulePaths,
    AirImports,
    SessionCalls,
    TuneTrainableApi,
    ReportKeywordMetrics,
    ReportCheckpointKeyword,
    CompatTarget,
    NativeTarget,
    LeftoverOldApi,
    UnusedNoqa,
)

BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in RULES}

__all__ = ["BY_CODE", "RULES", "Context", "Diagnostic", "Rule"]
