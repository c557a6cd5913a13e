"""V1 semantics on an object store reached through a URI with a query
(``s3://bucket/runs?region=...&endpoint_override=http://host:port``, how teams reach MinIO or any
S3-compatible store), on both engines, against raw V1 running the same program in the same
process: the run fails as V1's does, and ``Result.from_path``, ``can_restore``, the trial
directory's checkpoints and the workers' artifacts (``SyncConfig(sync_artifacts=True)``) read
back the same (docs/compatibility.md §22, §28, §31)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.one_pass]

SCRIPT = r"""
import importlib, json, os, sys, tempfile
from pathlib import Path
from moto.server import ThreadedMotoServer

import ray
from ray.train.base_trainer import TrainingFailedError as V1Failed

# Ray first, then the store and its credentials, set in the driver only (as Ray's own
# test_new_persistence.py sets them): V1's engine hands the AWS_* variables to its trial and
# workers; compat's V1 semantics on V2's engine must too (V2's controller makes the directory).
ray.init(num_cpus=2, include_dashboard=False, address="local")
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
host, port = server.get_host_and_port()
os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
for name in ("AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION"):
    os.environ.pop(name, None)  # only the URI says where the store is
QUERY = f"region=us-east-1&endpoint_override=http://{host}:{port}"
import pyarrow.fs as pafs

pafs.FileSystem.from_uri(f"s3://runs?{QUERY}&allow_bucket_creation=true")[0].create_dir("runs")
ROOT = f"s3://runs/experiments?{QUERY}"


def loop(config):
    api = importlib.import_module(config["api"])
    for epoch in range(3):
        Path(f"artifact_{epoch}.txt").write_text(str(epoch))  # in the working directory: V1's artifacts
        with tempfile.TemporaryDirectory() as d:
            Path(d, "epoch").write_text(str(epoch))
            checkpoint = api.Checkpoint.from_directory(d) if epoch != 1 else None
            api.report({"epoch": epoch, "loss": 1.0 / (epoch + 1)}, checkpoint=checkpoint)
    raise ValueError("the last epoch failed")


def observe(api):
    train, torch = importlib.import_module(api), importlib.import_module(api + ".torch")
    name = "exp-" + api.replace(".", "-")
    trainer = torch.TorchTrainer(
        loop, train_loop_config={"api": api}, scaling_config=train.ScalingConfig(num_workers=1),
        run_config=train.RunConfig(name=name, storage_path=ROOT, sync_config=train.SyncConfig(sync_artifacts=True)),
    )
    try:
        trainer.fit()
        raised = None
    except Exception as error:
        raised = "TrainingFailedError" if isinstance(error, V1Failed) else f"{type(error).__name__}: {error}"
    experiment = f"s3://runs/experiments/{name}?{QUERY}"
    fs, base = pafs.FileSystem.from_uri(experiment)
    (trial,) = [i for i in fs.get_file_info(pafs.FileSelector(base)) if i.type == pafs.FileType.Directory]
    trial_uri = f"s3://{trial.path}?{QUERY}"
    # compat loads a stored error only when told to trust the storage (raw Ray always does, §29)
    result = train.Result.from_path(trial_uri, **({"trust_stored_objects": True} if api == "compat" else {}))
    names = [os.path.basename(i.path) for i in fs.get_file_info(pafs.FileSelector(trial.path))]
    return {
        "raised": raised,
        "can_restore": torch.TorchTrainer.can_restore(experiment),
        "metrics": {k: result.metrics[k] for k in ("epoch", "loss")},
        "epochs": list(result.metrics_dataframe["epoch"]),
        "checkpoints": [os.path.basename(c.path) for c, _ in result.best_checkpoints],
        "error": type(result.error).__name__ if result.error is not None else None,
        "checkpoint_glob": sorted(n for n in names if n.startswith("checkpoint_")),  # how V1-era code finds them
        "artifacts": sorted(n for n in names if n.startswith("artifact_")),
    }


print("OBSERVED " + json.dumps({api: observe(api) for api in ("ray.train", "compat")}), flush=True)
ray.shutdown()
server.stop()
"""


@pytest.mark.extended_cases("v1")  # CI: on V2's engine, compat's own path; raw V1 is the oracle of both
@pytest.mark.parametrize("engine", ["v1", "v2"])
def test_v1_semantics_on_a_uri_with_a_query_observe_what_raw_v1_observes(engine: str, tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_TRAIN_V2_ENABLED="0", COMPAT_V1_ENGINE=engine)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("OBSERVED ")]
    assert lines, out.stderr[-6000:]
    seen = json.loads(lines[-1].removeprefix("OBSERVED "))
    assert seen["compat"] == seen["ray.train"]
    assert seen["ray.train"]["raised"] == "TrainingFailedError" and seen["ray.train"]["epochs"] == [0, 1, 2]
    # SyncConfig(sync_artifacts=True): the worker's files reached the trial directory (a report
    # with a checkpoint syncs them; epoch 2's was the last before the failure).
    assert seen["ray.train"]["artifacts"] == ["artifact_0.txt", "artifact_1.txt", "artifact_2.txt"]
