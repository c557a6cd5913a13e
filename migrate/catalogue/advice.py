"""The reviewed half of the catalogue: what to do instead of each V1-era name Ray no longer has.

``entries.py`` (generated from Ray's releases) says *what* moved or went; this table, written
and reviewed by hand, says what replaces it, by family: the first pattern that matches a
qualified name gives its advice. ``CHANGED`` lists names the newest release still binds that are
V1's all the same (importable under V2, wrong there). tests/migrate/test_catalogue.py fails
when a removed entry has no advice here, so a new Ray release cannot add silent names.
"""

from __future__ import annotations

import re

_CKPT_DIR = (
    "a checkpoint is a directory now: write your files to a directory and use "
    "`ray.train.Checkpoint.from_directory(dir)`; read it with `checkpoint.as_directory()` / "
    "`checkpoint.to_directory()` (`checkpoint.path`, `checkpoint.filesystem`)"
)
_FRAMEWORK_CKPT = (
    "V1's framework checkpoints are gone: save the model into a directory yourself "
    "(`model.save_pretrained(dir)`, `torch.save(model.state_dict(), ...)`) and report "
    "`ray.train.Checkpoint.from_directory(dir)`"
)
_TRAINER_HOOKS = (
    "V1's trainer hooks are gone: V2's trainers are not subclassed; do this work inside the "
    "training function (its datasets through `ray.train.get_dataset_shard(name)`)"
)
_TUNE_CONTEXT = "inside a Tune trainable: `ray.tune.get_context().{getter}()`"

# (pattern on the qualified name, what to do instead). First match wins; order matters.
ADVICE: tuple[tuple[str, str], ...] = (
    # --- Predictors (removed from Ray in 2.56)
    (r"Predictor|\.predictor\.|_predictor\.|\.batch_predictor\.|_get_gpus$",
     "Predictors were removed from Ray: load the model from the checkpoint yourself and run it "
     "with Ray Data (`ds.map_batches(MyModel, concurrency=...)`, the model loaded in `__init__`)"),
    # --- the pre-AIR ray.train API of Ray 2.0-2.2
    (r"^ray\.train(\.trainer)?\.Trainer$",
     "Ray 2.0's `Trainer(backend=...)` is gone: build your framework's trainer "
     "(`ray.train.torch.TorchTrainer(train_loop_per_worker, scaling_config=ray.train.ScalingConfig("
     "num_workers=...))`) and call `trainer.fit()`"),
    (r"^ray\.train(\.trainer)?\.(TrainingIterator|TrainWorkerGroup|noop)$",
     "Ray 2.0's Trainer internals are gone: call `fit()` on your framework's trainer and read the `Result`"),
    (r"^ray\.train(\.train_loop_utils)?\.world_size$", "`ray.train.get_context().get_world_size()`"),
    (r"^ray\.train(\.train_loop_utils)?\.world_rank$", "`ray.train.get_context().get_world_rank()`"),
    (r"^ray\.train(\.train_loop_utils)?\.local_rank$", "`ray.train.get_context().get_local_rank()`"),
    (r"^ray\.train(\.train_loop_utils)?\.save_checkpoint$",
     "`ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(dir))`, the files written to dir"),
    (r"^ray\.train(\.train_loop_utils)?\.load_checkpoint$",
     "`ray.train.get_checkpoint()` (a directory: `with checkpoint.as_directory() as dir: ...`)"),
    (r"CheckpointStrategy$",
     "`ray.train.CheckpointConfig(num_to_keep=..., checkpoint_score_attribute=..., "
     "checkpoint_score_order=...)` in `RunConfig(checkpoint_config=...)`"),
    (r"TorchTensorboardProfilerCallback$|TorchWorkerProfiler$",
     "profile with `torch.profiler` inside the training function"),
    (r"^ray\.train\.callbacks\.|TrainingCallback$",
     "a `ray.train.UserCallback` subclass (its `after_report` sees every round's metrics) in "
     "`RunConfig(callbacks=[...])`, or log from the training function"),
    # --- removed trainers, and V1's trainer classes that V2's do not derive from
    (r"\.BaseTrainer$",
     "V1's trainer base class: V2's trainers do not derive from it (`isinstance` is False; a "
     "subclass's `training_loop`/`setup` never run). Write a training function for "
     "`ray.train.torch.TorchTrainer` (or your framework's trainer)"),
    (r"^ray\.train\.data_parallel_trainer\.DataParallelTrainer$",
     "V1's DataParallelTrainer in either setting (`ray.train` exports none): under V2 use "
     "`ray.train.v2.api.data_parallel_trainer.DataParallelTrainer` or your framework's trainer "
     "(`ray.train.torch.TorchTrainer`)"),
    (r"(HuggingFace|Transformers)Trainer$",
     "use `ray.train.torch.TorchTrainer` with a training function that builds `transformers.Trainer`, "
     "calls `ray.train.huggingface.transformers.prepare_trainer(trainer)` and adds "
     "`ray.train.huggingface.transformers.RayTrainReportCallback()`"),
    (r"AccelerateTrainer$", "use `ray.train.torch.TorchTrainer` with a training function that uses `accelerate.Accelerator`"),
    (r"Lightning(Trainer|ConfigBuilder)$",
     "use `ray.train.torch.TorchTrainer` with a training function that builds `pl.Trainer(strategy="
     "ray.train.lightning.RayDDPStrategy(), plugins=[ray.train.lightning.RayLightningEnvironment()], "
     "callbacks=[ray.train.lightning.RayTrainReportCallback()])` and calls "
     "`ray.train.lightning.prepare_trainer(trainer)`"),
    (r"MosaicTrainer$", "use `ray.train.torch.TorchTrainer` with a training function that runs composer's Trainer"),
    (r"SklearnTrainer$",
     "Ray Train has no scikit-learn trainer: fit the model in a Ray task, or with joblib's Ray backend "
     "(`ray.util.joblib.register_ray()`)"),
    (r"RLTrainer$", "use RLlib directly (`PPOConfig().environment(...).build().train()`, or `tune.Tuner(\"PPO\", ...)`)"),
    (r"GBDTTrainer$", "use `ray.train.xgboost.XGBoostTrainer` or `ray.train.lightgbm.LightGBMTrainer` (a train_loop_per_worker)"),
    (r"DummyTrainer$|make_local_dataset_iterator$",
     "a `DataParallelTrainer` whose training function iterates `ray.train.get_dataset_shard(\"train\")`"),
    # --- framework checkpoints and AIR's checkpoint API
    (r"(HuggingFace|Transformers|Lightning|RL|Sklearn|Tensorflow|Torch)Checkpoint$", _FRAMEWORK_CKPT),
    (r"Checkpoint\.(set_preprocessor|get_preprocessor)$",
     "checkpoints carry no preprocessor: save it into the checkpoint directory yourself (or preprocess "
     "your datasets before fit())"),
    (r"Checkpoint\.", _CKPT_DIR),
    (r"DatasetConfig$", "`ray.train.DataConfig(datasets_to_split=...)` (other arguments: see RTM125)"),
    # --- Ray Data's pieces that lived in ray.air
    (r"^ray\.air\.util\.(tensor|object)_extensions\.",
     "Ray Data's extension types are `ray.data.extensions` now (`TensorArray`, `TensorDtype`, "
     "`ArrowTensorArray`, ...); a helper not exported there has no public replacement"),
    (r"^ray\.air\.util\.data_batch_conversion\.", "no replacement: batches are pandas, NumPy or pyarrow (`batch_format=`)"),
    (r"^ray\.air\.util\.torch_dist\.",
     "`ray.train.torch.TorchTrainer` sets up torch.distributed's process group; use torch.distributed directly inside it"),
    (r"keras\.Callback$", "`ray.train.tensorflow.keras.ReportCheckpointCallback` (reports metrics and checkpoints)"),
    # --- session functions and Tune's function API
    (r"session\.get_world_rank$", "`ray.train.get_context().get_world_rank()`"),
    (r"session\.get_world_size$", "`ray.train.get_context().get_world_size()`"),
    (r"session\.get_local_rank$", "`ray.train.get_context().get_local_rank()`"),
    (r"session\.get_local_world_size$", "`ray.train.get_context().get_local_world_size()`"),
    (r"session\.get_node_rank$", "`ray.train.get_context().get_node_rank()`"),
    (r"session\.get_experiment_name$", "`ray.train.get_context().get_experiment_name()`"),
    (r"\.(session\.)?get_trial_(dir|id|name|resources)$", "TRIAL"),  # filled in by advice_for
    (r"^ray\.tune\.checkpoint_dir$",
     "`ray.tune.report(metrics, checkpoint=ray.tune.Checkpoint.from_directory(dir))`, the files written to dir"),
    (r"^ray\.tune\.is_session_enabled$",
     "no public replacement: pass whether the function runs under Tune to it (a config key)"),
    # --- members of configs, results and trainers
    (r"Result\.config$",
     "V2's `Result.config` raises DeprecationWarning (a Tune trial's config): keep the `train_loop_config` "
     "you gave the trainer"),
    (r"Result\.(\(log_dir=\)|log_dir)$", "`result.path` (the run's directory) or `result.checkpoint.path`"),
    (r"RunConfig\.(\(local_dir=\)|local_dir)$", "`RunConfig(storage_path=...)`"),
    (r"SyncConfig\.",
     "`RunConfig(storage_path=...)` (a URI, or a pyarrow filesystem with `storage_filesystem=`): "
     "checkpoints are uploaded as they are reported"),
    (r"DataConfig\.set_train_total_resources$", "no replacement: V2's DataConfig sizes its resources itself"),
    (r"(XGBoost|LightGBM)Trainer\.get_model$",
     "`RayTrainReportCallback.get_model(checkpoint)` (from `ray.train.xgboost` / `ray.train.lightgbm`): "
     "V2's trainer raises DeprecationWarning here"),
    (r"Trainer\.as_trainable$",
     "V2's trainers are not Tune trainables: call `trainer.fit()` inside a Tune function trainable (see RTM117)"),
    (r"Trainer\.(setup|training_loop|preprocess_datasets|get_dataset_config)$", _TRAINER_HOOKS),
    (r"Trainer\.\(preprocessor=\)$", "preprocess the datasets before fit() (`ds.map_batches(...)`; see RTM126)"),
    (r"Trainer\.\(dmatrix_params=\)$",
     "V2's XGBoostTrainer/LightGBMTrainer take a train_loop_per_worker that builds the DMatrix/Dataset "
     "itself (see RTM122)"),
    # --- Ray Tune's V1-era modules (Ray 2.0-2.x) that 2.60 no longer has
    (r"experiment_analysis\.LegacyExperimentAnalysis$",
     "`ray.tune.ExperimentAnalysis`, or the `ResultGrid` that `tune.Tuner(...).fit()` returns"),
    (r"^ray\.tune\.automl\.board\.",
     "Tune's AutoML board (a web app) was removed: look at runs in TensorBoard or the Ray dashboard"),
    (r"^ray\.tune\.automl\.",
     "`ray.tune.automl` was removed: search with `ray.tune.search` (`BasicVariantGenerator`, or a searcher "
     "such as `ray.tune.search.optuna.OptunaSearch`) in `tune.TuneConfig(search_alg=...)`"),
    (r"(ray_trial_executor\.RayTrialExecutor|trial_runner\.TrialRunner)$",
     "Tune's trial runner and executor were internal and are gone: run with `tune.Tuner(...).fit()`, "
     "and customize with `tune.Callback`s or a scheduler"),
    (r"^ray\.tune\.experimental\.output\.",
     "Tune's internal console output classes: choose the output with `tune.RunConfig(verbose=..., "
     "progress_reporter=...)` (a `ray.tune.ProgressReporter`)"),
    (r"^ray\.tune\.(integration\.(docker|kubernetes)|sync_client)\.|^ray\.tune\.syncer\.(Syncer|SyncerCallback|"
     r"get_node_to_storage_syncer)$",
     "Tune syncs through its storage itself: `tune.RunConfig(storage_path=..., storage_filesystem=...)` "
     "(a shared filesystem, a cloud URI, or a pyarrow filesystem)"),
    (r"^ray\.tune\.integration\.mlflow\.(MLflowTrainableMixin|mlflow_mixin)$",
     "`ray.air.integrations.mlflow.setup_mlflow(config)` inside the trainable"),
    (r"^ray\.tune\.integration\.wandb\.(WandbTrainableMixin|wandb_mixin)$",
     "`ray.air.integrations.wandb.setup_wandb(config)` inside the trainable"),
    (r"^ray\.tune\.integration\.mxnet\.",
     "Tune's MXNet integration was removed: report from your own callback with "
     "`ray.tune.report(metrics, checkpoint=...)`"),
    (r"^ray\.tune\.logger\.(\w+\.)?(CSVLogger|JsonLogger|TBXLogger|UnifiedLogger|NoopLogger|Logger|"
     r"LegacyLoggerCallback)$",
     "Tune's Logger classes were replaced by logger callbacks: `ray.tune.logger.CSVLoggerCallback`, "
     "`JsonLoggerCallback`, `TBXLoggerCallback` or a `ray.tune.logger.LoggerCallback` subclass of your own, "
     "in `tune.RunConfig(callbacks=[...])`"),
    (r"\.np_random_generator$", "an internal helper of Tune's sampling, removed: seed your own generator"),
    (r"^ray\.tune\.schedulers\.pb2\.(explore|select_config)$",
     "internal functions of PB2: use `ray.tune.schedulers.pb2.PB2` itself"),
    (r"^ray\.tune\.(search|suggest)\.(dragonfly|flaml|sigopt|skopt)\b",
     "this searcher's integration was removed from Ray Tune: use another `ray.tune.search` searcher "
     "(`optuna.OptunaSearch`, `hyperopt.HyperOptSearch`, `bayesopt.BayesOptSearch`, `ax.AxSearch`, ...), "
     "or a `ray.tune.search.Searcher` subclass of your own around the library"),
    (r"^ray\.tune\.sklearn\.",
     "`ray.tune.sklearn` left Ray for the `tune-sklearn` package: `from tune_sklearn import TuneSearchCV`"),
    (r"^ray\.tune\.suggest\.warn_structure_refactor$",
     "internal: Ray 2.0's notice that `ray.tune.suggest` moved to `ray.tune.search`"),
    (r"^ray\.tune\.(trainable|utils\.trainable|trainable\.(util|function_trainable))\.(Session|FuncCheckpointUtil|"
     r"TrainableUtil|PlacementGroupUtil)$",
     "internal helpers of Tune's trainables, removed: report with `ray.tune.report(metrics, checkpoint=...)`, "
     "ask for resources with `tune.with_resources(trainable, ...)`"),
    (r"^ray\.tune\.function_runner\.(FunctionRunner|FuncCheckpointUtil)$",
     "internal: Tune wraps a function trainable itself (`tune.Tuner(train_fn)`); report from it with "
     "`ray.tune.report(metrics, checkpoint=...)`"),
    (r"\.config_parser\.",
     "internal: Tune's parser of experiment specs, removed; configure a run with "
     "`tune.Tuner(trainable, tune_config=tune.TuneConfig(...), run_config=tune.RunConfig(...))`"),
    (r"^ray\.tune\.utils\.(_detect_checkpoint_function|_detect_reporter|file_transfer\.delete_on_node)$",
     "an internal Tune helper, removed: nothing replaces it"),
    (r"^ray\.tune\.web_server\.",
     "Tune's web server (TuneClient, TuneServer) was removed: use the Ray dashboard or the Ray Jobs API"),
)  # fmt: skip

# Names the newest release still binds under V2 that are V1's all the same: flagged as removed
# ones are (their advice is ADVICE's).
CHANGED = frozenset(
    {
        "ray.train.base_trainer.BaseTrainer", "ray.train.trainer.BaseTrainer",
        "ray.train.data_parallel_trainer.DataParallelTrainer", "ray.train.trainer.TrainingIterator",
        "ray.train.torch.train_loop_utils.TorchWorkerProfiler",
        # V2's forms still have these, and raise DeprecationWarning when called (Ray's own V2 tests
        # assert it: python/ray/train/v2/tests/test_xgboost_trainer.py)
        "ray.train.xgboost.XGBoostTrainer.get_model", "ray.train.lightgbm.LightGBMTrainer.get_model",
        # V2's Result has the property and raises DeprecationWarning on reading it
        "ray.train.Result.config",
    }
)  # fmt: skip

# Removed members whose name alone is too common outside Ray to flag on an object of unknown type.
COMMON_MEMBER_NAMES = frozenset({"uri", "from_dict", "from_bytes", "to_bytes", "from_uri", "to_uri"})

_TRIAL_GETTERS = {
    "dir": "get_trial_dir",
    "id": "get_trial_id",
    "name": "get_trial_name",
    "resources": "get_trial_resources",
}
_COMPILED = tuple((re.compile(pattern), text) for pattern, text in ADVICE)


def advice_for(qualified: str) -> str | None:
    """What to do instead of ``qualified`` (a removed or changed name), or None when the table
    has nothing for it."""
    for pattern, text in _COMPILED:
        match = pattern.search(qualified)
        if match:
            if text == "TRIAL":
                getter = _TRIAL_GETTERS[match.group(2)]
                return (
                    _TUNE_CONTEXT.format(getter=getter) + " (Train V2 runs no trials: use the run's own name or path)"
                )
            return text
    return None
