"""Failures of processes and nodes on a multi-node cluster (``ray.cluster_utils.Cluster``, as
Ray's own fault-tolerance tests build one): a head and three worker nodes on this machine,
the two training workers on different ones (a custom resource each worker node has one of),
so that a run that lost a node has two left to retry on.

One run with ``FailureConfig(max_failures=2)`` meets both failures production sees: a worker
process that exits without raising (``os._exit``, as the OOM killer or a crash leaves it), then
the loss of the node holding a worker (a preempted spot node). Each ends in one
``after_exception`` naming the rank that was lost, after the rounds completed before it; the
third attempt finishes; no report is lost. The run (V1 on V1's engine) is in a subprocess, since a
process connects to one Ray cluster and the suite's is single-node."""

from __future__ import annotations

import pytest

from tests.compat.clusters import run_script

SCRIPT = r"""
import json, os, sys, threading, time
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

import compat as train
from tests.compat.clusters import watchdog

WORK = Path(sys.argv[1])
SLOT = {"worker_slot": 1}


def faults(config):
    work = Path(config["work"])
    rank = train.get_context().get_world_rank()
    node = ray.get_runtime_context().get_node_id()
    train.report({"step": 0, "node": node})
    if not (work / "exited").exists():  # attempt 0: rank 1's process exits without a word
        if rank == 1:
            (work / "exited").write_text("")
            os._exit(1)
        time.sleep(60)  # torn down with its group
    elif not (work / "removed").exists():  # attempt 1: its node goes away (the driver removes it)
        (work / f"ready-{rank}").write_text(node)
        time.sleep(60)
    train.report({"step": 1, "node": node})


class Calls(train.UserCallback):
    def __init__(self, path):
        self.path = path

    def _write(self, entry):
        with open(self.path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def after_report(self, run_context, metrics, checkpoint):
        self._write(["report", metrics[0]["step"]])

    def after_exception(self, run_context, worker_exceptions):
        self._write(["exception", {str(r): type(e).__name__ for r, e in worker_exceptions.items()}])


cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
nodes = [cluster.add_node(num_cpus=1, resources=SLOT) for _ in range(3)]
cluster.wait_for_nodes()
# Ray's own processes that look a cluster up by themselves (V2's placement-group cleaner, the state
# API) pick the machine's newest GCS: with other tests' clusters running beside, not this one.
os.environ['RAY_ADDRESS'] = cluster.address
ray.init(address=cluster.address, include_dashboard=False,
         runtime_env={'env_vars': {'RAY_ADDRESS': cluster.address}})
removed = []


def remove_the_node_of_rank_1():
    # Once both workers of attempt 1 run: the node of rank 1 goes away. (Not rank 0's: V1's
    # engine puts its trainer actor, which the run needs, beside rank 0.)
    while not all((WORK / f"ready-{rank}").exists() for rank in (0, 1)):
        time.sleep(0.2)
    (WORK / "removed").write_text("")
    node = next(n for n in nodes if n.node_id == (WORK / "ready-1").read_text())
    removed.append(node.node_id)
    cluster.remove_node(node)


watchdog(cluster, float(sys.argv[2]))
remover = threading.Thread(target=remove_the_node_of_rank_1, daemon=True)
remover.start()
calls = WORK / "calls.jsonl"
result = train.DataParallelTrainer(
    faults,
    train_loop_config={"work": str(WORK)},
    scaling_config=train.ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1, **SLOT}),
    run_config=train.RunConfig(
        name="faults", storage_path=str(WORK / "storage"), callbacks=[Calls(str(calls))],
        failure_config=train.FailureConfig(max_failures=2),
    ),
).fit()
remover.join(timeout=60)
frame = result.worker_metrics_dataframe
print("MULTINODE " + json.dumps({
    "calls": [json.loads(line) for line in calls.read_text().splitlines()],
    "rows": sorted(zip(*(frame[c].tolist() for c in ("attempt", "world_rank", "step", "node")))),
    "removed": removed[0],
    "ready": {r: (WORK / f"ready-{r}").read_text() for r in (0, 1)},
    "backend": result.backend,
}))
ray.shutdown()
cluster.shutdown()
"""


@pytest.mark.ray
@pytest.mark.one_pass
@pytest.mark.parametrize("setting", ["0"])
@pytest.mark.extended_rerun
def test_a_process_exit_then_a_lost_node_each_reach_after_exception_once_and_lose_no_report(
    setting: str, tmp_path
) -> None:
    """Under V1 (V1's engine). Under v2, a lost node is test_cluster_features' elastic run (one
    after_exception naming the lost rank, every report kept, raw V2 as the oracle) and a process
    that exits test_runs' dead-worker case."""
    env = {"RAY_TRAIN_V2_ENABLED": setting}
    # Deadlines for CI's load (see test_cluster_features' fixture).
    run = run_script(SCRIPT, "MULTINODE", [str(tmp_path), "600"], env, timeout_s=700)
    assert run["backend"] == ("v1" if setting == "0" else "v2")
    calls = run["calls"]
    assert run["ready"]["1"] == run["removed"] != run["ready"]["0"]
    assert [c[0] for c in calls] == ["report", "exception", "report", "exception", "report", "report"]
    assert list(calls[1][1]) == ["1"]  # the process that exited, and only it
    assert list(calls[3][1]) == ["1"]  # the worker whose node went away, and only it
    rows = [tuple(r[:3]) for r in run["rows"]]
    # Every report of every attempt: each attempt's first round from both ranks, the last
    # attempt's second round too; nothing of the lost processes is missing.
    assert [r for r in rows if r[2] == 0] == [(a, rank, 0) for a in (0, 1, 2) for rank in (0, 1)]
    assert [r for r in rows if r[0] == 2] == [(2, 0, 0), (2, 0, 1), (2, 1, 0), (2, 1, 1)]
    # The workers ran on two nodes, and the last attempt not on the removed one.
    assert len({r[3] for r in run["rows"] if r[0] == 0}) == 2
    assert run["removed"] not in {r[3] for r in run["rows"] if r[0] == 2}
