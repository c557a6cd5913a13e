"""Every user-facing text of compat, in one place. Each says what is wrong and what to do."""

from __future__ import annotations

# The migration guide. The codemod (migrate.tables.GUIDE) names the same address; the runtime imports
# nothing of the codemod, so a project's own ``migrate`` package beside its script is no concern of a
# run's (tests/test_layers.py holds both).
GUIDE = "https://github.com/ray-project/ray/issues/49454"


def invalid_switch_value(var: str, value: str) -> str:
    return (
        f"{var}={value!r} is not a value Ray Train understands as intended: Ray reads "
        f"only '1'/'true' as V2 and would silently run V1 for {value!r}. "
        f"Set {var}=1 for the V2 semantics or {var}=0 for V1. See {GUIDE}"
    )


def invalid_engine_value(var: str, value: str) -> str:
    return (
        f"{var}={value!r} is not an engine compat knows. Set {var}=v1 to run V1 semantics on "
        f"Ray's V1 engine, or {var}=v2 to run them on Ray's V2 engine (docs/compatibility.md §28)."
    )


def invalid_record_channel(var: str, value: str) -> str:
    return (
        f"{var}={value!r} is not a record channel compat knows. Unset it (or set {var}=socket) to "
        f"send report records to the run ledger over its socket, or set {var}=actor to send each as "
        "a Ray actor call (slower; for clusters whose nodes cannot open connections to each other)."
    )


def invalid_record_max_bytes(var: str, value: str) -> str:
    return (
        f"{var}={value!r} is not a size in bytes. Unset it (the default is 512 MiB) or set it to a "
        "positive whole number of bytes: the largest report record a worker sends over the record "
        "channel (a larger one goes by a Ray actor call) and the host reads from it."
    )


def invalid_setting(var: str, value: str, accepts: str, default: object) -> str:
    """A compat variable holding a value its type does not accept (compat_core.settings)."""
    shown = "off" if default is False else f"{default:g}" if isinstance(default, float) else str(default)
    return f"{var}={value!r}: give {accepts} (default {shown}), or unset it for the default."


def validation_failed(error: str, *, device_needs_worker: bool) -> str:
    """A validation task's failure, with the way out when it is Ray 2.50's ``get_device``."""
    if device_needs_worker and "TrainFnUtils has not been initialized" in error:
        return (
            f"{error} (Ray 2.50's V2 ray.train.torch.get_device() fails outside a training worker, "
            "as in iter_torch_batches() inside a validation function: pass iter_torch_batches("
            "device='cpu') or the device you want, or use Ray 2.51 or newer, where it answers "
            "the local device; docs/compatibility.md §27)"
        )
    return error


def not_in_rays_v1_trainer(name: str) -> str:
    return (
        f"compat.{name}() was called in the training function of Ray's own V1 trainer, which has no "
        f"{name}(): it is V2's. Run the function with compat's trainer (compat.torch.TorchTrainer, "
        "...), which has it under both settings, or with Ray's V2 trainer (RAY_TRAIN_V2_ENABLED=1)."
    )


NOT_IN_TRAINING_FUNCTION = (  # raw V2's words first
    "`{name}` cannot be used outside of a Ray Train training function. You are calling this API from "
    "the driver or another non-training process. These utilities are only available within a function "
    "launched by `trainer.fit()`.\n"
    "{name}() was called outside a training function. Call it inside the function "
    "you pass to compat.torch.TorchTrainer(...), which runs on every worker."
)


def bad_metrics_type(got: object) -> str:
    hint = ""
    if type(got).__name__ == "Checkpoint":
        hint = " It looks like a Checkpoint: call report(metrics, checkpoint=ckpt)."
    return (
        f"report() needs a dict of metrics as its first argument, got "
        f"{type(got).__name__}.{hint} Pass {{}} to report only a checkpoint."
    )


def bad_metric_key(key: object) -> str:
    return (
        f"report() metrics keys must be str, got {key!r} ({type(key).__name__}). "
        f"Convert it, e.g. {{str(k): v for k, v in metrics.items()}}."
    )


def bad_metric_value(key: str, value: object, reason: str) -> str:
    return (
        f"report() metric {key!r} has a value of type {type(value).__name__} that cannot "
        f"be stored ({reason}). Report a plain number or string: for a tensor call "
        f".item(); put large objects in the checkpoint instead."
    )


def non_finite_metric(key: str, count: int, first: str) -> str:
    return (
        f"metric {key!r} was NaN or infinite in {count} report(s) (first: {first}). It is "
        f"recorded as reported, as Ray does; a checkpoint ranked by it sorts unpredictably "
        f"(checkpoint_score_attribute) and dashboards show gaps. Check the computation "
        f"(learning rate, loss scaling) if the run diverged."
    )


def bad_checkpoint(got: object) -> str:
    return (
        f"report() takes a ray.train.Checkpoint (or None) as checkpoint, got "
        f"{type(got).__name__}. Build one with compat.Checkpoint.from_directory(path)."
    )


VALIDATION_NEEDS_CHECKPOINT = (  # Ray's message first, as raw V2 raises it
    "Validation requires a checkpoint to be provided.\n"
    "report(..., {form}) asks for validation but no checkpoint was given: validation runs "
    "on a checkpoint. Pass checkpoint=compat.Checkpoint.from_directory(path)."
)

BOTH_VALIDATION_FORMS = (
    "report() got both validate_fn= (the older form) and validation= (Ray 2.60's form). "
    "Use one: validation=True with TorchTrainer(validation_config=ValidationConfig(fn)), "
    "or validate_fn=fn with validate_config={{...}}."
)

VALIDATION_WITHOUT_CONFIG = (  # Ray's message first, as raw V2 raises it
    "`validation_config` was not set on the trainer, but a validation was requested.\n"
    "report(validation=...) was called but the trainer has no validation function. "
    "Pass TorchTrainer(..., validation_config=compat.ValidationConfig(fn)), or use "
    "report(..., validate_fn=fn, validate_config={...})."
)

VALIDATE_FN_NOT_CALLABLE = "report(validate_fn=...) must be a function (checkpoint, config) -> dict, got {got}."


def callback_failed(callback: str, hook: str, round_index: int | None, error: str) -> str:
    where = f" at report round {round_index}" if round_index is not None else ""
    return (
        f"{callback}.{hook}{where} raised {error}. Training went on and every reported "
        f"metric is kept in this error's .result. Fix the callback (or catch "
        f"exceptions inside it)."
    )


def ledger_host_lost(how: str, then: str) -> str:
    return (
        f"{how} ({then}). Every report it was told of before is kept, read back from its journal "
        "on this node; UserCallbacks may have missed the rounds it was delivering. The next fit() "
        "starts a new one; a user callback that ends its process each time it is called "
        "(os._exit, exhausting memory) is the usual cause"
    )


def training_failed(error: str) -> str:
    return (
        f"Training failed: {error}. Every metric reported before the failure is kept "
        f"in this error's .result (result.worker_metrics_dataframe, result.metrics)."
    )


AMP_UNDER_V2 = (
    "compat.torch.accelerate(amp=True) under v2: Ray's V2 has no mixed-precision helper, and "
    "compat does not emulate one. Use torch.autocast with torch.amp.GradScaler in the "
    "training function, or run this under RAY_TRAIN_V2_ENABLED=0."
)


def untested_ray(version: str, newest: str) -> str:
    return (
        f"ray {version} is newer than any release ray-train-compat was tested on (newest: {newest}). "
        "compat runs on it as best it can; please report what breaks. Pin "
        f'"ray[train]=={newest}" for a tested combination.'
    )


def unknown_param_space_keys(trainer: str, keys: list[str], known: tuple[str, ...]) -> str:
    return (
        f"Tuner({trainer}, param_space=...) got {', '.join(map(repr, keys))}: a trainer's param_space "
        f"sets {', '.join(known[:-1])} (and params for the V1 form of the tree trainers). Put "
        "hyperparameters under 'train_loop_config'."
    )


def missing_ray(spec: str) -> str:
    return (
        "ray-train-compat's runtime (import compat) needs Ray Train, which is not installed. "
        f'Install the runtime: pip install "ray-train-compat[runtime]" (or pip install "ray[train]{spec}"). '
        "The codemod (python -m migrate) needs only the base install."
    )


def unsupported_ray(version: str, spec: str) -> str:
    return (
        f"ray-train-compat supports ray{spec}, but ray {version} is installed. "
        f'Install a supported version: pip install "ray[train]{spec}".'
    )


UNKNOWN_REPORT_CHECKPOINT_POSITION = (
    "report() got a positional checkpoint of type {got}. The second positional argument "
    "is the checkpoint: pass a compat.Checkpoint or None, and prefer checkpoint=... "
    "(V1 requires the keyword)."
)


def train_api_in_tune(name: str, compat_advice: str) -> str:
    """Raw V2's error for ``ray.train.<name>`` in a Tune function trainable, then compat's words
    (the V1-only kind's message)."""
    return (
        f"`ray.train.{name}` is deprecated when running in a function passed to Ray Tune. Please use the "
        "equivalent `ray.tune` API instead. See this issue for more context: "
        f"https://github.com/ray-project/ray/issues/49454\n{compat_advice}"
    )


def custom_trainer_loop(trainer: str, methods: list[str]) -> str:
    names = " and ".join(f"{m}()" for m in methods)
    return (
        f"{trainer} overrides {names}: compat's trainers run Ray's own training loop, which "
        "would not call it. Move that code into the training function (train_loop_per_worker), "
        "or subclass Ray's V1 ray.train.trainer.BaseTrainer directly (V1 only; V2 has no "
        "custom trainers) (docs/compatibility.md §31)."
    )


def not_in_this_ray(feature: str) -> str:
    from compat_core.releases.facts import VERSION

    return (
        f"{feature} is not in Ray {VERSION}, the installed Ray: a later release added it. "
        "Upgrade Ray (pip install -U 'ray[train]'), or leave it out."
    )


def needs_v2_engine(feature: str, what: str) -> str:
    """A V2 feature used with V1 semantics on Ray's V1 engine (docs/compatibility.md §31)."""
    return (
        f"{feature}: {what} is a feature of Ray's V2 engine, and Ray's V1 engine runs this "
        "run (RAY_TRAIN_V2_ENABLED=0). To keep V1 semantics and use it, run them on V2's engine "
        "(COMPAT_V1_ENGINE=v2); or flip the run to V2 (RAY_TRAIN_V2_ENABLED=1); or leave it out."
    )


def needs_newer_ray(feature: str, release: str) -> str:
    from compat_core.releases.facts import VERSION

    return (
        f"{feature} under v2 needs Ray {release} or newer; this is Ray {VERSION}. "
        f"Upgrade Ray (pip install 'ray[train]>={release}'), or leave the option out."
    )


def unexpected_keyword(trainer: str, keyword: str, known: tuple[str, ...]) -> str:
    """Python's own wording for an unknown keyword, with the closest known one."""
    import difflib

    close = difflib.get_close_matches(keyword, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else f" It takes {', '.join(known)}."
    return f"{trainer}.__init__() got an unexpected keyword argument {keyword!r}.{hint}"


def nothing_to_restore(path: str, found: str) -> str:
    return (
        f"Cannot restore from {path!r}: it holds {found}. Pass the experiment directory a "
        "trainer's fit() started in, <storage_path>/<name> (it holds compat_trainer.pkl, or "
        "trainer.pkl for a run started by Ray's V1 trainer); check it first with "
        "Trainer.can_restore(path)."
    )


def tuner_restore_of_a_v2_engine_run(trainer: str) -> str:
    return (
        f"This experiment is a {trainer} run that compat's v1 backend ran on Ray's V2 engine "
        "(COMPAT_V1_ENGINE=v2, or a Ray without V1's engine), which runs no Tune experiment: "
        f"tune.Tuner.restore cannot resume it. Resume it with {trainer}.restore(path).fit() "
        "(compat keeps V1's Trainer.restore on both engines; docs/compatibility.md §29)."
    )


def restore_needs_datasets(trainer: str, missing: list[str], given: list[str]) -> str:
    return (
        f"{trainer}.restore() needs the datasets the first run had, given again: the run had "
        f"{missing}, the call gave {given}. Pass {trainer}.restore(path, datasets={{...}}) with "
        "the same names (datasets are not stored with the run)."
    )


def restore_other_trainer(stored: str, called: str) -> str:
    return (
        f"The run was started by {stored}, and {called}.restore() was called: restore it with {stored}.restore(path)."
    )


def cannot_keep_readiness_record(path: str, error: BaseException) -> str:
    return (
        f"This run's readiness record could not be stored at {path} ({type(error).__name__}: {error}): "
        "`python -m compat readiness` will not count this run; result.migration_report() still "
        "shows what it relied on. Check that the storage is writable."
    )


def worker_reports_changed(path: str) -> str:
    return (
        f"{path} is not the file this fit() wrote: it was replaced or changed in storage since. Its "
        "values are read as Result.from_path reads them (objects other than plain values, containers "
        "and numpy arrays as StoredValue, nothing unpickled that could run code). Pass "
        "Result.from_path(path, trust_stored_objects=True) only if you trust whoever changed it."
    )


def stored_values_unreadable(path: str, where: list[str]) -> str:
    shown = "; ".join(where[:5]) + (f"; and {len(where) - 5} more" if len(where) > 5 else "")
    return (
        f"{path}: {len(where)} stored value(s) could not be read and are UnreadableValue in "
        f"worker_metrics_dataframe (the file is corrupt; every other value was read): {shown}"
    )


def stored_reports_cut(path: str, error: BaseException, rows: int) -> str:
    return (
        f"{path} is cut short or corrupt ({type(error).__name__}: {error}): worker_metrics_dataframe "
        f"holds the {rows} report(s) stored before the damage. Restore the file from a copy to read "
        "the rest."
    )


def worker_reports_gone(path: str, error: BaseException) -> str:
    return (
        f"result.worker_metrics_dataframe is read from the run's stored reports when first read, "
        f"and {path} cannot be read now ({type(error).__name__}: {error}): the run's directory was "
        "moved or removed. Read it with Result.from_path(<where the run is now>).worker_metrics_dataframe, "
        "or read the frame before moving the run."
    )


def cannot_keep_validations(path: str, error: BaseException) -> str:
    return (
        f"The outcomes of this fit's validations could not be stored with the run at {path} "
        f"({type(error).__name__}: {error}): this fit's result has them (its checkpoints' "
        "validated metrics and statuses), Result.from_path() on that directory will not. "
        "Check that the storage is writable."
    )


def cannot_read_journal(path: str, error: BaseException) -> str:
    return (
        f"The journal of an earlier driver of this run, {path}, could not be read "
        f"({type(error).__name__}: {error}): the outcomes of the validations that driver ran are "
        "neither in this fit's result nor stored with the run."
    )


def cannot_keep_worker_reports(path: str, error: BaseException) -> str:
    return (
        f"Every worker's reports could not be stored with the run at {path} "
        f"({type(error).__name__}: {error}): this fit's result has them "
        "(result.worker_metrics_dataframe), Result.from_path() on that directory will not. "
        "Check that the storage is writable."
    )


def cannot_save_for_restore(trainer: str, error: BaseException) -> str:
    return (
        f"{trainer}.restore() will not be able to restore this run: its arguments could not be "
        f"pickled into the experiment directory ({type(error).__name__}: {error}). Training goes "
        "on; to make it restorable, pass arguments that pickle (define the training function at "
        "module level, keep unpicklable objects out of train_loop_config)."
    )


def no_result_at(path: str, found: str) -> str:
    return (
        f"No run result at {path!r}: it holds {found}. Pass a run's directory: result.path of "
        "the run (V1's trial directory, <storage_path>/<name>/<trial>, or V2's run directory, "
        "<storage_path>/<name>)."
    )


def worker_lost(rank: int, attempt: int, where: str | None) -> str:
    seen = f" ({where})" if where else ""
    return (
        f"Worker rank {rank} of attempt {attempt}{seen} stopped without finishing or raising, "
        f"and the engine started attempt {attempt + 1} without reporting why: the worker's "
        "process or node was most likely lost, or the engine's own part of the attempt failed "
        "(on Ray's V1 engine, Tune retries a trial whose actor died without recording an "
        "error; see docs/compatibility.md §21)."
    )


def package_shadowed(name: str, found: str, ours: str, where: str) -> str:
    kind = "module" if found.endswith(".py") and not found.endswith("__init__.py") else "package"
    return (
        f"{found} would be imported as `{name}` instead of ray-train-compat's package of that name "
        f"({ours}): it comes first on {where}, so ray-train-compat's imports of `{name}` there "
        f"would fail (or, in an editable install, run another `{name}`). Rename that {kind} (for "
        f"example to `myproject_{name}`, and its imports to match), move it into your project's own "
        "package, or start the program from another directory."
    )


def unsafe_state_parent(path: str, parent: str, problem: str, var: str) -> str:
    return (
        f"compat will not keep its run state (journals read back with pickle, staged logs) in "
        f"{path}: the directory {parent} above it is not safe ({problem}), so another user could "
        f"rename compat's directory away and put their own in its place. Set {var} to a directory "
        "whose every parent only you or root can write (or is sticky, as /tmp is), or make "
        f"{parent} so (chmod go-w, or chmod +t)."
    )


def unsafe_state_dir(path: str, problem: str, var: str) -> str:
    return (
        f"compat will not keep its run state (journals read back with pickle, staged logs) in "
        f"{path}: {problem}, so another user could plant or replace files compat reads back. "
        f"Remove it if it is not yours to keep (compat creates it again, mode 0700), make it yours "
        f"and private (chown it to you; chmod 700), or set {var} to a directory only you can write."
    )


# --- arguments of the wrong type or value ---------------------------------------------------------


def takes(where: str, what: str, got: str) -> str:
    """``where`` was given something it does not take: ``what`` it takes, ``got`` what it got."""
    return f"{where} takes {what}, got {got}."


def needs_training_function(trainer: str, got: str) -> str:
    return f"{trainer} needs a training function as its first argument, got {got}."


def training_loop_outside_tune(trainer: str) -> str:
    return (
        f"{trainer}.training_loop() runs inside a Ray Tune trial, as Ray's; "
        "outside one, call fit() (or pass the trainer to tune.Tuner)."
    )


def local_mode_needs_workers(trainer: str) -> str:
    return (
        f"{trainer} in V1's params=/label_column= form needs workers: "
        "ScalingConfig(num_workers=0) (V2's local mode) runs a training function only."
    )


def tree_missing_train_dataset(trainer: str, keys: list[str]) -> str:
    return (
        f"{trainer}(params=..., label_column=...) trains on datasets={{'train': ...}}, which is missing "
        f"(got keys {keys}). Pass the training dataset under 'train', or pass a "
        "training function as the first argument."
    )


def tree_needs_label_column(trainer: str) -> str:
    return (
        f"{trainer}(params=...) needs label_column=, the name of the label column in datasets['train'] "
        "(or pass a training function as the first argument)."
    )


def tree_loop_config_without_function(trainer: str) -> str:
    return (
        f"{trainer}: train_loop_config= goes with a training function; with the V1 form "
        "(no training function) pass the booster parameters as params=."
    )


def tree_v1_form_with_function(trainer: str, names: str) -> str:
    return (
        f"{trainer} got a training function and {names}: those belong to the V1 form "
        "(no training function). Pass them to xgboost/lightgbm inside your training "
        "function, or drop the training function."
    )


def tree_get_model_without_checkpoint(trainer: str) -> str:
    return (
        f"{trainer}.get_model(checkpoint) got None: pass the Checkpoint the report "
        "callback saved (result.checkpoint is None when the run saved no checkpoint: "
        "check RayTrainReportCallback's frequency and checkpoint_at_end)."
    )


SCALING_WORKERS_FORM = "ScalingConfig(num_workers) must be an int or a tuple of two ints."


def scaling_min_over_max(workers: object, low: int, high: int) -> str:
    return f"Invalid ScalingConfig(num_workers={workers}): min_workers={low} must be <= max_workers={high}."


def scaling_workers_range(workers: object) -> str:
    return (
        f"ScalingConfig(num_workers={workers!r}): num_workers must be an int >= 0 (0: V2's local "
        "mode, the training function run in the driver's process) or a (min, max) tuple with min >= 1."
    )


SCALING_NEGATIVE_MONITOR_INTERVAL = "ScalingConfig(elastic_resize_monitor_interval_s) must be non-negative."


def checkpoint_score_order(value: object) -> str:
    return f"CheckpointConfig(checkpoint_score_order={value!r}): use 'max' or 'min'."


def checkpoint_num_to_keep(value: object) -> str:
    return f"CheckpointConfig(num_to_keep={value!r}): use None (keep all) or >= 1."


VALIDATE_CONFIG_WITHOUT_FN = (
    "report(validate_config=...) was given without validate_fn=. Pass both, or use "
    "validation=compat.ValidationTaskConfig(fn_kwargs={...})."
)


def validation_result_not_dict(fn: str, got: str) -> str:
    return f"The validation function {fn} must return a dict of metrics, got {got}."


def in_strict_mode(message: str, var: str) -> str:
    """A V1-only warning raised because strict mode is on."""
    return f"{message} (strict mode: {var}=1)"


# --- what compat could not do, and went on without ------------------------------------------------


def cannot_record_fit(error: BaseException) -> str:
    return f"compat could not record this fit for `compat compare`: {error}"


def cannot_upload_artifacts(trial_dir: object, error: BaseException) -> str:
    return f"compat could not upload this worker's artifacts to {trial_dir}: {error}"


def journal_event_unreadable(path: str, kind: object, at: int, error: BaseException) -> str:
    return (
        f"{path}: the {kind!r} event at byte {at} of this run ledger's journal cannot be loaded "
        f"({type(error).__name__}: {error}); skipped, the journal's other events are read"
    )


def stored_validations_unreadable(path: str, error: BaseException) -> str:
    return (
        f"{path}: cannot read the validation outcomes stored with the run ({error}); the "
        "checkpoints are read with their reported metrics, as Ray's files hold them"
    )


def ledger_lost_run(run_id: str) -> str:
    return f"compat's run ledger holds no run {run_id!r} (its journal could not be read back)"


def not_a_journal(path: str, first: object) -> str:
    return f"{path} is not a run ledger's journal (its first event is {first!r})"


def result_not_found(rays_words: str, path: str, found: str) -> str:
    """Ray's own words for a path without a result, then compat's (:func:`no_result_at`)."""
    return f"{rays_words}\n{no_result_at(path, found)}"


# --- readiness records ----------------------------------------------------------------------------


def not_a_readiness_record(schema: str) -> str:
    return f'not a readiness record (no "schema": "{schema}")'


def readiness_record_version(version: object) -> str:
    return f"a readiness record with an invalid version {version!r}"


def readiness_record_too_new(version: int, reads: int) -> str:
    return (
        f"a readiness record of schema version {version}, newer than this compat reads ({reads}): "
        "upgrade ray-train-compat where you run `compat readiness`"
    )


def readiness_field_missing(field: object) -> str:
    return f"a malformed readiness record: the field {field!r} is missing"


def readiness_field_malformed(field: str, shown: str, wanted: str) -> str:
    return f"a malformed readiness record: the field {field!r} is {shown}, not {wanted}"


def record_file_of_kind(kind: str) -> str:
    """A path a readiness record should be at holds something else (a FIFO, a socket, ...)."""
    return f"is {kind}, not a record file: skipped"


def record_file_too_big(size: int, limit: int, *, local: bool) -> str:
    said = f"is {size:,} bytes, over the {limit:,} a record file may be: skipped"
    return said + " (not one compat wrote: each fit appends one line of about 2 KB)" if local else said


def migration_report_takes(got: str) -> str:
    return (
        "migration_report() takes a compat Result, a Ray Tune ResultGrid (Tuner.fit()'s) or one of its "
        f"trials' Results; got {got}"
    )


# --- Ray's own words, verbatim: where compat raises as Ray does, a program matching Ray's message
# keeps matching (docs/compatibility.md §32) ------------------------------------------------------


def ray_num_workers_positive(num_workers: object) -> str:
    return f"'num_workers' in `scaling_config` must be a positive integer. Received {num_workers}"


def ray_could_not_serialize(fn: object, task: str, trace: str) -> str:
    return f"Could not serialize the argument {fn!r} for a task or actor {task}:\n{trace}"


def ray_preprocess_datasets_deprecated(preprocessor_message: str) -> str:
    return (
        "`preprocess_datasets` is no longer used, since preprocessors "
        f"are no longer accepted by Trainers.\n{preprocessor_message}"
    )


def ray_checkpoint_frequency_refused(frequency: object) -> str:
    """V1's refusal of a checkpoint frequency on a trainer with a training loop (Tune's, 2.60)."""
    return (
        f"You passed `checkpoint_frequency={frequency}` to your CheckpointConfig, but this trainer does not "
        "support this argument. If you passed in a Trainer that takes in a custom training loop, you will "
        "need to report a checkpoint every `checkpoint_frequency` iterations within your training loop "
        "using `ray.tune.report(metrics=..., checkpoint=...)` to get this behavior."
    )


def ray_checkpoint_at_end_refused(at_end: object) -> str:
    """V1's refusal of ``checkpoint_at_end`` on a trainer with a training loop (Tune's, 2.60)."""
    return (
        f"You passed `checkpoint_at_end={at_end}` to your CheckpointConfig, but this trainer does not "
        "support this argument. If you passed in a Trainer that takes in a custom training loop, you should "
        "include one last call to `ray.tune.report(metrics=..., checkpoint=...)` at the end of your "
        "training loop to get this behavior."
    )


RAY_LABEL_SELECTOR_LENGTH = (
    "If `label_selector` is a list, it must be the same length as `max_workers` (or `num_workers` when fixed)."
)
RAY_CHECKPOINT_KEEP_ALL_RANKS = (
    "The experimental `_checkpoint_keep_all_ranks` config is deprecated. "
    "This behavior is now controlled by reporting `checkpoint=None` "
    "in the workers that shouldn't persist a checkpoint. "
    "For example, if you only want the rank 0 worker to persist a "
    "checkpoint (e.g., in standard data parallel training), "
    "then you should save and report a checkpoint if "
    "`ray.train.get_context().get_world_rank() == 0` "
    "and `None` otherwise."
)
RAY_CHECKPOINT_UPLOAD_FROM_WORKERS = (
    "The experimental `_checkpoint_upload_from_workers` config is "
    "deprecated. Uploading checkpoint directly from the worker is "
    "now the default behavior."
)
RAY_LOCAL_DIR = (
    "The `RunConfig(local_dir)` argument is deprecated. "
    "You should set the `RunConfig(storage_path)` instead."
    "See the docs: https://docs.ray.io/en/latest/train/user-guides/"
    "persistent-storage.html#setting-the-local-staging-directory"
)
RAY_STORAGE_VARIABLE = (
    "The `RAY_STORAGE` environment variable is deprecated. Please use `RunConfig(storage_path)` instead."
)
RAY_NO_CHECKPOINT = "No checkpoint exists in the trial directory!"
# Tune's words (ray/tune/tune.py, 2.44-2.60) for a local-directory variable V1's engine refuses.
RAY_LOCAL_DIRECTORY_VARIABLES = ("TUNE_RESULT_DIR", "RAY_AIR_LOCAL_CACHE_DIR")


def ray_local_directory_variable(name: str) -> str:
    return (
        f"The environment variable `{name}` is deprecated. "
        "It is no longer used and will not have any effect. "
        "You should set the `storage_path` instead. Files will no longer be "
        "written to `~/ray_results` as long as `storage_path` is set."
        "See the docs: https://docs.ray.io/en/latest/train/user-guides/"
        "persistent-storage.html#setting-the-local-staging-directory"
    )


def ray_unsupported_mode(mode: object) -> str:
    return f'Unsupported mode: {mode}. Please choose from ["min", "max"]!'


def ray_invalid_metric(metric: str, metrics: object, kept: list[str]) -> str:
    return (
        f"Invalid metric name {metric}! You may choose from the following metrics: "
        f"{metrics}.\nThe kept checkpoints' metrics are {kept}."
    )


def refused_because(refusal: str, why: str) -> str:
    """An error's words (often Ray's), then why compat gives it here."""
    return f"{refusal}: {why}"
