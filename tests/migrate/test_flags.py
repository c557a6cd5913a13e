"""Each flag rule: flagged through an alias, silent on look-alike code, never rewriting."""

from __future__ import annotations

import pytest

from migrate.engine import needs_parsing
from tests.migrate.conftest import migrate

CASES = [
    # code, flagged (aliased import forms), not flagged (look-alikes)
    ("RTM101", "from ray import train as t\ndef f():\n    t.report(metrics={'a': 1})\n",
     "def f(logger):\n    logger.report({'a': 1})\n"),
    ("RTM101", "from ray import train\ndef f():\n    train.report({'a': 1}, checkpoint=None)\n",
     "from ray import train\ndef f(c):\n    train.report({'a': 1}, c)\n"),
    # only rank 0 passes a checkpoint: the round has one, V2 and compat keep its metrics
    ("RTM101", "from ray import train\ndef f(c, rank):\n    if rank == 0:\n        print(c)\n"
     "    else:\n        train.report({'a': 1})\n",
     "from ray import train\ndef f(c, rank):\n    if rank == 0:\n        train.report({'a': 1}, checkpoint=c)\n"
     "    else:\n        train.report({'a': 1})\n"),
    ("RTM102", "import ray\nframe = res.metrics_dataframe\n", "import ray\nframe = res.metrics\n"),
    ("RTM103", "from ray.train import Checkpoint as C\nc = C.from_dict({})\n",
     "import ray\nimport pandas as pd\nd = pd.DataFrame().to_dict()\n"),
    ("RTM104", "from ray.train.torch import TorchCheckpoint as TC\nc = TC.from_model(m)\n",
     "from ray.train import Checkpoint\nc = Checkpoint.from_directory('x')\n"),
    ("RTM105", "import ray\nprint(result.log_dir)\n", "import ray\nprint(result.path)\n"),
    ("RTM106", "from ray.train import RunConfig as RC\nfrom ray.tune.logger import CSVLoggerCallback\n"
     "rc = RC(callbacks=[CSVLoggerCallback()])\n",
     "from ray.train import RunConfig, UserCallback\nrc = RunConfig(callbacks=[MyCallback()])\n"),
    ("RTM107", "from ray.air.config import ScalingConfig as SC\ns = SC(trainer_resources={'CPU': 0})\n",
     "from ray.train import ScalingConfig\ns = ScalingConfig(num_workers=2)\n"),
    ("RTM108", "import ray.train\nrc = ray.train.RunConfig(stop={'x': 1})\n",
     "import ray.train\nrc = ray.train.RunConfig(name='a')\n"),
    ("RTM108", "from ray.train import SyncConfig\ns = SyncConfig()\n",
     "import ray\nclass SyncConfig: ...\ns = SyncConfig()\n"),
    # Tune's own RunConfig and SyncConfig take these options under V2.
    ("RTM108", "import ray.train\nrc = ray.train.RunConfig(verbose=0)\n",
     "from ray import tune\nrc = tune.RunConfig(stop={'x': 1}, verbose=0)\ns = tune.SyncConfig(sync_period=5)\n"),
    ("RTM108", "from ray.air import RunConfig\nrc = RunConfig(progress_reporter=r)\n",
     "from ray.tune import RunConfig, SyncConfig\nrc = RunConfig(sync_config=SyncConfig(), log_to_file=True)\n"),
    # local_dir and SyncConfig(upload_dir=) are rejected everywhere, Tune's own classes too.
    ("RTM108", "from ray.air import RunConfig\nrc = RunConfig(name='x', local_dir='/tmp/results')\n",
     "from ray.air import RunConfig\nrc = RunConfig(name='x', storage_path='/tmp/results')\n"),
    ("RTM108", "from ray.tune.syncer import SyncConfig\ns = SyncConfig(upload_dir='s3://b/x')\n",
     "from ray.tune import SyncConfig\ns = SyncConfig(sync_period=300)\n"),
    ("RTM108", "from ray import tune\nrc = tune.RunConfig(local_dir='/tmp/results')\n",
     "from ray import tune\nrc = tune.RunConfig(storage_path='/tmp/results')\n"),
    ("RTM109", "from ray import train\nf = train.FailureConfig(fail_fast=True)\n",
     "from ray import train\nf = train.FailureConfig(max_failures=1)\n"),
    ("RTM110", "from ray.air import CheckpointConfig as CC\nc = CC(checkpoint_at_end=True)\n",
     "from ray.train import CheckpointConfig\nc = CheckpointConfig(num_to_keep=1)\n"),
    ("RTM111", "from ray import train\nn = train.get_context().get_trial_dir()\n",
     "from ray import train\nn = train.get_context().get_experiment_name()\n"),
    ("RTM112", "from ray.train.torch import TorchTrainer as TT\nt = TT.restore('/x')\n",
     "import ray\nfrom mylib import Trainer\nt = Trainer.restore('/x')\n"),
    ("RTM113", "from ray.train.torch import TorchTrainer\nt = TorchTrainer(f, resume_from_checkpoint=c)\n",
     "from ray.train.torch import TorchTrainer\nt = TorchTrainer(f, train_loop_config={'c': c})\n"),
    ("RTM114", "from ray import tune\ndef f():\n    tune.report({'a': 1})\n",
     "from ray import tune\ntune.report({'a': 1})\n"),
    # A Tune function trainable is where tune.report belongs (what RTM005 writes there).
    ("RTM114", "from ray import tune\nfrom ray.train.torch import TorchTrainer\ndef f(c):\n    tune.report({'a': 1})\n"
     "TorchTrainer(f)\n",
     "from ray import tune\ndef f(c):\n    tune.report({'a': 1})\ntune.Tuner(tune.with_parameters(f, d=1)).fit()\n"),
    ("RTM115", "from ray import train\ntrain.report(m, checkpoint=c, validate_fn=v)\n",
     "from ray import train\ntrain.report(m, checkpoint=c, validation=True)\n"),
    ("RTM117", "from ray import tune\nfrom ray.train.torch import TorchTrainer as TT\nt = TT(f)\ntune.Tuner(t).fit()\n",
     "from ray import tune\nfrom ray.train.torch import TorchTrainer\ndef f(c):\n    TorchTrainer(g).fit()\n"
     "tune.Tuner(f).fit()\n"),
    ("RTM117", "from ray.tune import Tuner\nfrom ray.train.torch import TorchTrainer\nTuner(TorchTrainer(f))\n",
     "from ray.tune import Tuner\nTuner('PPO')\n"),
    # compat's trainers are Tune trainables in both modes (docs/compatibility.md §24)
    ("RTM117", "from ray.tune import Tuner\nfrom ray.train.xgboost import XGBoostTrainer\nTuner(XGBoostTrainer(f))\n",
     "from ray.tune import Tuner\nfrom compat.torch import TorchTrainer\nTuner(TorchTrainer(f))\n"),
    ("RTM117", "from ray import tune\nfrom ray.train.torch import TorchTrainer\nt = TorchTrainer(f)\nu = t\n"
     "tune.Tuner(u).fit()\n",
     "from ray import tune\nt = t\ntune.Tuner(t).fit()\n"),  # a name bound to itself: no endless lookup
    # V1-era code resuming a trainer's run through Tune (V1's engine ran it as a Tune experiment).
    ("RTM117", "from ray import tune\nfrom ray.train.torch import TorchTrainer\n"
     "tune.Tuner.restore('/runs/job', trainable=TorchTrainer(f)).fit()\n",
     "from ray import tune\ntune.Tuner.restore('/runs/job', trainable=train_driver).fit()\n"),
    ("RTM118", "from ray.train.base_trainer import TrainingFailedError as E\ntry:\n    t.fit()\nexcept E:\n    pass\n",
     "import ray.train\ntry:\n    t.fit()\nexcept ray.train.TrainingFailedError:\n    pass\n"),
    # Every trainer built with a list of Tune callbacks held in a module-level name.
    ("RTM106", "from ray.train import RunConfig\nfrom ray.tune.logger import CSVLoggerCallback\n"
     "callbacks = [CSVLoggerCallback()]\nrc = RunConfig(callbacks=callbacks)\n",
     "from ray.train import RunConfig\ncallbacks = [MyUserCallback()]\nrc = RunConfig(callbacks=callbacks)\n"),
    ("RTM126", "from ray.train.torch import TorchTrainer as T\nt = T(f, preprocessor=p)\n",
     "import ray\nfrom sklearn.pipeline import Pipeline\nPipeline(steps, preprocessor=p)\n"),
    ("RTM127", "import ray\nmodel = result.checkpoint.get_model()\n",
     "from ray.train.xgboost import RayTrainReportCallback\nm = RayTrainReportCallback.get_model(result.checkpoint)\n"),
    ("RTM127", "import ray\ndef f(ckpt):\n    return ckpt.get_preprocessor()\n",
     "import ray\nfrom transformers import AutoConfig\nm = registry.get_model('bert')\n"),
    ("RTM127", "import ray\nbooster = best_ckpt_obj.get_booster()\n",
     "import ray\nbooster = model.get_booster()\n"),
    ("RTM120", "from ray import train\ndef f(c):\n    ctx = train.get_context()\n    m = ctx.get_metadata()\n",
     "import ray\nimport mlflow\nm = mlflow.get_run(r).get_metadata()\n"),
    ("RTM121", "from ray.train.torch import TorchTrainer\nr = TorchTrainer(f).fit()\n"
     "n = r.metrics['training_iteration']\n",
     "from ray.train.torch import TorchTrainer\nr = TorchTrainer(f).fit()\nn = r.metrics['epoch']\n"),
    ("RTM121", "import ray\nt = result.metrics.get('time_total_s')\n",
     "import ray\nt = result.metrics.get('loss')\nd = config.get('time_total_s')\n"),
    ("RTM121", "import ray.train\nframe = result.metrics_dataframe['timesteps_total']\n",
     "import ray.train\nframe = result.metrics_dataframe['loss']\n"),
    ("RTM121", "import ray\nn = (result.metrics)[  # the round\n    r'training_iteration'\n]\n",
     "import ray\nn = metrics[\n    'training_iteration'\n]\n"),
    ("RTM122", "from ray.train.xgboost import XGBoostTrainer as X\nX(params={}, label_column='y', datasets=d)\n",
     "from ray.train.xgboost import XGBoostTrainer\nXGBoostTrainer(train_func, datasets=d)\n"),
    ("RTM122", "from ray.train.lightgbm import LightGBMTrainer\nLightGBMTrainer(num_boost_round=5, datasets=d)\n",
     "import ray\nimport lightgbm\nlightgbm.train(params={}, train_set=s, num_boost_round=5)\n"),
    ("RTM123", "from ray.train.horovod import HorovodTrainer as H\nt = H(f)\n",
     "from ray.train.torch import TorchTrainer\nt = TorchTrainer(f)\n"),
    # Ray 2.60 ships a V2 TensorflowTrainer (its own V2 tests run it): not a removed trainer.
    ("RTM123", "from ray.train.huggingface import AccelerateTrainer\nt = AccelerateTrainer(f)\n",
     "import ray.train.tensorflow\nt = ray.train.tensorflow.TensorflowTrainer(f)\n"),
    ("RTM123", "from ray.train.huggingface import TransformersTrainer\nt = TransformersTrainer(f)\n",
     "from ray.train.huggingface.transformers import prepare_trainer\nt = prepare_trainer(t)\n"),
    ("RTM124", "from ray.train.torch import accelerate\ndef f(c):\n    accelerate(amp=True)\n",
     "import ray\nfrom accelerate import Accelerator\na = Accelerator()\n"),
    ("RTM125", "from ray.air import DatasetConfig as DC\nd = {'train': DC(split=True)}\n",
     "from ray.train import DataConfig\nd = DataConfig(datasets_to_split=['train'])\n"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "flagged", "quiet"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_flag_rule(code: str, flagged: str, quiet: str) -> None:
    assert needs_parsing(flagged, "ray")  # the pre-filter never skips a file a rule flags
    out, found = migrate(flagged, code)
    assert out == flagged  # flag rules never rewrite
    assert [d.code for d in found] == [code] and not found[0].fixed
    assert "issues/49454" in found[0].message
    assert migrate(quiet, code) == (quiet, [])


def test_rejected_keywords_are_one_table_with_each_rows_own_finding() -> None:
    """RTM107-RTM110 are rows of one check (migrate.rules._flags.RejectedKeyword): a call's
    findings from several rows are joined in order, Tune's own classes take the Tune options,
    and a class flagged as a whole is not flagged again when a keyword row already was."""
    source = (
        "from ray import tune\n"
        "from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig, SyncConfig\n"
        "a = RunConfig(name='x', local_dir='/tmp', stop={'a': 1}, verbose=0)\n"
        "b = tune.RunConfig(local_dir='/tmp', stop={'a': 1})\n"
        "c = SyncConfig(upload_dir='s3://x', syncer=None)\n"
        "d = SyncConfig()\n"
        "e = tune.SyncConfig(syncer=None)\n"
        "f = tune.SyncConfig()\n"
        "g = FailureConfig(fail_fast=True)\n"
        "h = ScalingConfig(trainer_resources={'CPU': 0})\n"
        "i = CheckpointConfig(checkpoint_frequency=2, checkpoint_at_end=True)\n"
    )
    _, found = migrate(source, "RTM107", "RTM108", "RTM109", "RTM110")
    removed = "was removed (Ray 2.7): give the upload location as `storage_path=`"
    assert [(d.line, d.code, d.message.split(". ")[0]) for d in found] == [
        (3, "RTM108", "`RunConfig(local_dir=)` is rejected by Ray (V1 and V2): give it as `storage_path=`; "
         "`RunConfig(stop=, verbose=)` is rejected by V2"),
        (4, "RTM108", "`RunConfig(local_dir=)` is rejected by Ray (V1 and V2): give it as `storage_path=`"),
        (5, "RTM108", f"`SyncConfig(upload_dir=, syncer=)` {removed}"),
        (6, "RTM108", "`SyncConfig` is not used by V2"),
        (7, "RTM108", f"`SyncConfig(syncer=)` {removed}"),
        (9, "RTM109", "`FailureConfig(fail_fast=...)` is rejected by V2"),
        (10, "RTM107", "`ScalingConfig(trainer_resources=...)` is rejected by V2"),
        (11, "RTM110", "`CheckpointConfig(checkpoint_frequency=, checkpoint_at_end=)` is rejected by V2"),
    ]  # fmt: skip


def test_checkpoint_flags_name_the_directory_based_replacement() -> None:
    _, found = migrate("from ray.train import Checkpoint\nc = Checkpoint.from_dict({})\nd = ckpt.to_uri()\n", "RTM103")
    assert [d.line for d in found] == [2, 3]
    assert "Checkpoint.from_directory(d)" in found[0].message and "torch.save(state" in found[0].message
    assert "ckpt.path" in found[1].message
    _, found = migrate("from ray.train.torch import TorchCheckpoint\nTorchCheckpoint.from_model(m)\n", "RTM104")
    assert "torch.save(model.state_dict()" in found[0].message and "model.load_state_dict" in found[0].message


@pytest.mark.parametrize("imports", ["import compat as train\n", "from compat import Checkpoint\ntrain = None\n"])
def test_a_removed_checkpoint_method_stays_flagged_after_the_move_onto_compat(imports: str) -> None:
    """`--target compat` rewrites the import to compat.Checkpoint, which is Ray's class and has
    no from_dict either: the call must stay flagged, or CI passes code that raises."""
    call = "train.Checkpoint" if imports.startswith("import") else "Checkpoint"
    source = f"{imports}c = {call}.from_dict({{}})\n"
    assert [d.code for d in migrate(source, target="compat")[1]] == ["RTM103"]
    v1_era = "from ray.air import Checkpoint\nc = Checkpoint.from_dict({})\n"
    out, found = migrate(v1_era, target="compat")
    assert "compat" in out and "RTM103" in [d.code for d in found]


def test_a_tuner_with_a_trainer_is_not_flagged_once_moved_onto_compat() -> None:
    """`--target compat` moves the trainer onto compat, whose trainers Tune runs in both modes:
    the rewritten file checks clean of RTM117, and so does the rewrite run itself."""
    v1_era = (
        "from ray import tune\nfrom ray.train.torch import TorchTrainer\n"
        "trainer = TorchTrainer(f)\ntune.Tuner(trainer).fit()\n"
    )
    out, found = migrate(v1_era, target="compat")
    assert "compat.torch" in out and "RTM117" not in [d.code for d in found]
    assert "RTM117" not in [d.code for d in migrate(out, target="compat")[1] + migrate(out)[1]]
    assert "RTM117" in [d.code for d in migrate(v1_era)[1]]  # still flagged while on Ray's trainer


def test_v1_tree_trainer_form_is_not_flagged_for_compat_which_runs_it() -> None:
    source = "from compat.xgboost import XGBoostTrainer\nXGBoostTrainer(params={}, label_column='y')\n"
    assert [d.code for d in migrate(source, target="native")[1] if d.code == "RTM122"] == ["RTM122"]
    assert [d.code for d in migrate(source, target="compat")[1] if d.code == "RTM122"] == []


@pytest.mark.parametrize(
    "source",
    [
        "from compat.torch import TorchTrainer\nif TorchTrainer.can_restore(p):\n    t = TorchTrainer.restore(p)\n",
        "from compat.torch import TorchTrainer\nt = TorchTrainer(f, resume_from_checkpoint=c, metadata={})\n",
    ],
)
def test_restore_and_resume_are_not_flagged_for_compat_which_keeps_them(source: str) -> None:
    codes = {"RTM112", "RTM113"}
    assert {d.code for d in migrate(source, target="native")[1]} & codes
    assert {d.code for d in migrate(source, target="compat")[1]} & codes == set()


def test_dataset_config_is_flagged_with_the_mapping_not_renamed() -> None:
    source = "from ray.air import DatasetConfig\n\nconfig = {'train': DatasetConfig(split=True)}\n"
    out, found = migrate(source)
    assert out == source  # DataConfig takes other arguments: a rename would not run
    (flag,) = [d for d in found if d.code == "RTM125"]
    assert "datasets_to_split" in flag.message and "random_shuffle" in flag.message


TUNE_AND_TRAIN = """\
from ray import train, tune
from ray.train.torch import TorchTrainer


def loop(config):
    train.report({"loss": 1.0})


def trainable(config):
    tune.report({"loss": 1.0})


result = TorchTrainer(loop).fit()
tuner = tune.Tuner(trainable, param_space={"lr": tune.grid_search([0.1, 0.2])})
grid = tuner.fit()
best = grid.get_best_result(metric="loss", mode="min")
a = best.metrics["training_iteration"]
b = best.metrics_dataframe
c = grid[0].metrics.get("time_total_s")
d = [r.metrics["training_iteration"] for r in grid]
for trial in grid:
    e = trial.metrics_dataframe["loss"]
f = tune.Tuner.restore("path", trainable).get_results().get_best_result().metrics_dataframe
x = result.metrics["training_iteration"]
y = result.metrics_dataframe
z = result.metrics.get("time_total_s")
"""


def test_a_tune_result_grids_results_keep_their_rows_and_keys_under_v2() -> None:
    """A file with a Trainer and a Tuner: the ResultGrid's results are Tune's, the same under
    V2 (every report a row, Tune's auto-filled keys); the Trainer's Result is flagged."""
    _, found = migrate(TUNE_AND_TRAIN, "RTM102", "RTM121")
    flagged = [(d.line, d.code, d.severity) for d in found]
    assert flagged == [(24, "RTM121", None), (25, "RTM102", None), (26, "RTM121", "silent")]  # only the Trainer's


def test_calls_reached_through_a_star_import_of_the_session_are_judged_as_the_sessions() -> None:
    """`from ray.air.session import *` then bare `report(...)`: flagged where called."""
    source = "from ray.air.session import *\ndef loop(config):\n    report({'a': 1})\n    c = get_checkpoint()\n"
    _, found = migrate(source)
    assert ("RTM101", 3) in [(d.code, d.line) for d in found]
    assert [d.line for d in found if d.code == "RTM100"] == [1]  # the import's finding names the calls
    shadowed = "from ray.air.session import *\ndef report(m):\n    pass\ndef loop(config):\n    report({'a': 1})\n"
    assert "RTM101" not in [d.code for d in migrate(shadowed)[1]]  # the module's own report()


LOG_DIR_FLAGGED = {
    "a trainer's result": "from ray.train.torch import TorchTrainer\nresult = TorchTrainer(f).fit()\n"
    "print(result.log_dir)\n",
    "a grid's best": "from ray import tune\ngrid = tune.Tuner(f).fit()\nbest = grid.get_best_result()\n"
    "print(best.log_dir)\n",
    "each of a grid": "from ray import tune\nfor r in tune.Tuner(f).fit():\n    print(r.log_dir)\n",
    "a result parameter": "import ray\n\n\ndef show(result):\n    return result.log_dir\n",
    "an indexed result": "import ray\nresults = trainer.fit()\nprint(results[0].log_dir)\n",
    "an attribute named so": "import ray\nprint(analysis.best_result.log_dir)\n",
}
LOG_DIR_QUIET = {
    "argparse": "import ray\nimport argparse\nargs = argparse.ArgumentParser().parse_args()\nray.init(args.log_dir)\n",
    "a namespace": "import ray\nfrom types import SimpleNamespace\nparams = SimpleNamespace(**c)\n"
    "print(params.log_dir)\n",
    "self": "import ray\n\n\nclass Agent:\n    def start(self):\n        return self.log_dir\n",
    "Lightning's trainer": "import ray\n\n\ndef on_fit_end(trainer, pl_module):\n    print(trainer.log_dir)\n",
    "a Lightning logger": "import ray\nfrom pytorch_lightning.loggers import TensorBoardLogger\n"
    "logger = TensorBoardLogger('x')\nprint(logger.log_dir)\n",
}


@pytest.mark.parametrize("source", LOG_DIR_FLAGGED.values(), ids=LOG_DIR_FLAGGED.keys())
def test_rtm105_flags_log_dir_on_what_may_be_a_ray_result(source: str) -> None:
    assert "RTM105" in {d.code for d in migrate(source, "RTM105")[1]}


@pytest.mark.parametrize("source", LOG_DIR_QUIET.values(), ids=LOG_DIR_QUIET.keys())
def test_rtm105_is_quiet_on_another_objects_log_dir(source: str) -> None:
    """Precision: Ray's own tree had 27 RTM105 [breaks] findings, none on a result (args.log_dir,
    self.log_dir, a config's); Lightning's Trainer and loggers have a log_dir of their own."""
    assert "RTM105" not in {d.code for d in migrate(source, "RTM105")[1]}
