"""Every way a program says where a run goes, as V1-era programs say it (no ``run_config``,
``RunConfig()``, a name only, a relative path, ``~/...``, a ``file://`` URI, a custom
``storage_filesystem``): the run lands where raw Ray puts it in the same mode, and
``Result.path``, ``Trainer.can_restore``/``restore`` and ``Result.from_path`` work on it.

Ray's default (``~/ray_results``) is read from ``ray.train.constants`` whenever a run starts, by
Ray's ``RunConfig`` and by compat alike; the tests point it at a temporary directory (and
``HOME`` too, for ``~``). The README's program, run as written from a fresh process with no
``storage_path`` at all, is tests/test_docs.py's.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pyarrow.fs as pafs
import pytest

import compat as train
from compat import DataParallelTrainer

pytestmark = [pytest.mark.ray, pytest.mark.one_pass]


def _two_rounds(config) -> None:
    for epoch in range(2):
        if epoch == 0:
            train.report({"epoch": epoch})
            continue
        with tempfile.TemporaryDirectory() as directory:  # the last round's checkpoint, on the run's filesystem
            Path(directory, "epoch").write_text(str(epoch))
            train.report({"epoch": epoch}, checkpoint=train.Checkpoint.from_directory(directory))


# name -> (run_config keywords, the storage root the run must land under, relative to tmp_path)
CASES = {
    "no run_config": (None, "default"),  # also RunConfig(): the same config (test below)
    "RunConfig(name=...)": ({"name": "named"}, "default"),
    "relative storage_path": ({"name": "rel", "storage_path": "results"}, "cwd/results"),
    "~ storage_path": ({"name": "tilde", "storage_path": "~/runs"}, "home/runs"),
    "file:// URI": ({"name": "uri", "storage_path": "file://{tmp}/uri"}, "uri"),
    "storage_filesystem": ({"name": "fs", "storage_path": "fs"}, "fs"),
}


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Ray's default storage, the home directory and the working directory, all under tmp_path."""
    import ray.train.constants

    monkeypatch.setattr(ray.train.constants, "DEFAULT_STORAGE_PATH", str(tmp_path / "default"))
    for name in ("home", "cwd"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path


def _run_config(keywords: dict | None, tmp: Path) -> tuple[dict, pafs.FileSystem | None]:
    if keywords is None:
        return {}, None
    keywords = {k: v.format(tmp=tmp) if isinstance(v, str) else v for k, v in keywords.items()}
    filesystem = None
    if keywords.get("storage_path") == "fs":  # a path on the filesystem, as given
        # A custom filesystem, as teams pass one: an fsspec filesystem wrapped by pyarrow's
        # PyFileSystem (Ray's workers write and read the checkpoints through it).
        import fsspec

        custom = pafs.PyFileSystem(pafs.FSSpecHandler(fsspec.filesystem("file")))
        filesystem = pafs.SubTreeFileSystem(str(tmp), custom)
        keywords["storage_filesystem"] = filesystem
    return {"run_config": train.RunConfig(**keywords)}, filesystem


# Ray's V2 engine (v2, and V1 semantics on it in CI's second pass) takes the storage root compat
# resolves the same way for every case: the cases whose root differs most run there.
ON_V2_ENGINE = ("no run_config", "relative storage_path", "storage_filesystem")


def test_no_run_config_is_run_config_with_nothing_set() -> None:
    from compat_core.config import RunConfig, coerce

    assert coerce(RunConfig, None, "run_config") == train.RunConfig() == RunConfig()


@pytest.mark.parametrize("case", list(CASES))
def test_a_run_lands_where_raw_ray_puts_it(case: str, backend: str, places: Path) -> None:
    on_v2_engine = backend == "v2" or os.environ.get("COMPAT_V1_ENGINE") == "v2"
    if on_v2_engine and case not in ON_V2_ENGINE:
        pytest.skip("on Ray's V2 engine: the cases whose storage root differs most (CI time)")
    keywords, root = CASES[case]
    kwargs, filesystem = _run_config(keywords, places)
    result = DataParallelTrainer(_two_rounds, scaling_config=train.ScalingConfig(num_workers=1), **kwargs).fit()

    expected_root = places / root
    name = (keywords or {}).get("name")
    path = Path(result.path) if filesystem is None else places / result.path.lstrip("/")
    v1_semantics = backend == "v1"
    # Raw Ray's layout in each mode: V1 a trial directory in the experiment directory, V2 the
    # run directory itself; an unnamed run named as each engine names it.
    experiment = path.parent if v1_semantics else path
    assert experiment.parent == expected_root, (result.path, expected_root)
    if name:
        assert experiment.name == name
    else:
        assert re.fullmatch(
            r"DataParallelTrainer_\d{4}-.*" if v1_semantics else r"ray_train_run-\d{4}-.*", experiment.name
        )
    if v1_semantics:
        assert re.fullmatch(r"DataParallelTrainer_\w+_00000_0_.*", path.name)
        assert (path / "progress.csv").is_file() and (path / "result.json").is_file()
        assert list(result.metrics_dataframe["epoch"]) == [0, 1]
    assert len(result.worker_metrics_dataframe) == 2
    with result.checkpoint.as_directory() as directory:  # read back through the run's filesystem
        assert Path(directory, "epoch").read_text() == "1"

    # A new driver finds the run where it is: read back, and restorable.
    loaded = train.Result.from_path(result.path, storage_filesystem=filesystem)
    assert list(loaded.worker_metrics_dataframe["epoch"]) == [0, 1]
    if v1_semantics:  # a trainer given no train_loop_config: raw V1's config is {} (was {"train_loop_config": None})
        assert result.config == loaded.config == {}
    experiment_location = os.path.dirname(result.path) if v1_semantics else result.path
    assert DataParallelTrainer.can_restore(experiment_location, storage_filesystem=filesystem)
    if v1_semantics:  # V1's engine ran a Tune experiment; on V2's, compat's tuner.pkl says what resumes it
        from ray import tune

        assert tune.Tuner.can_restore(experiment_location, storage_filesystem=filesystem)


@pytest.mark.extended_rerun
def test_a_run_without_a_storage_path_restores(backend: str, places: Path) -> None:
    """The V1 fault-tolerance idiom on a run that named no storage: restore it by its path."""
    first = DataParallelTrainer(_two_rounds, scaling_config=train.ScalingConfig(num_workers=1)).fit()
    experiment = os.path.dirname(first.path) if backend == "v1" else first.path
    again = DataParallelTrainer.restore(experiment).fit()
    assert again.path == first.path  # the same run goes on, where it was
    assert list(train.Result.from_path(again.path).worker_metrics_dataframe["epoch"]) == [0, 1, 0, 1]
