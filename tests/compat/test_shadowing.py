"""A module of the user's named ``compat`` (py2/py3 helpers, a vendored shim) where Ray's
processes would import it instead of this package: ``fit()`` fails at once, before Ray starts,
naming the file and what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compat import _shadowing
from compat.errors import CompatShadowedError

pytestmark = pytest.mark.one_pass  # starts no cluster; does not depend on the setting

README_PROGRAM = """\
import compat as train
from compat.torch import TorchTrainer


def train_func(config):
    train.report({"loss": 1.0})


print(TorchTrainer(train_func, scaling_config=train.ScalingConfig(num_workers=2)).fit())
"""


@pytest.mark.parametrize(
    ("script", "argv"),
    [
        # The repository's root holds compat.py; the job's script lives in a subdirectory and is
        # started from the root: the driver imports this package, Ray's workers would import the
        # root's compat.py (Ray puts the driver's working directory on their path).
        ("jobs/train.py", [sys.executable, "jobs/train.py"]),
        # compat.py beside the script, which runs with Python's safe path (-P, PYTHONSAFEPATH:
        # the script's directory is not put first), from that directory: the same for workers.
        ("train.py", [sys.executable, "-P", "train.py"]),
    ],
    ids=["in the working directory", "beside the script"],
)
def test_a_compat_py_where_rays_workers_look_first_stops_fit_at_once(
    script: str, argv: list[str], tmp_path: Path
) -> None:
    if "-P" in argv and sys.version_info < (3, 11):
        pytest.skip("python -P is Python 3.11's")
    (tmp_path / "compat.py").write_text("import sys\nPY2 = sys.version_info[0] == 2\n")
    (tmp_path / script).parent.mkdir(exist_ok=True)
    (tmp_path / script).write_text(README_PROGRAM)
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTHONPATH")}
    run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("compat_core.errors.CompatShadowedError: ")
    assert f"{tmp_path / 'compat.py'} would be imported as `compat`" in last
    assert "working directory" in last and "Rename that module" in last
    assert "Started a local Ray instance" not in run.stderr  # at once: nothing was started


def test_the_script_directory_counts_and_this_package_itself_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tmp_path / "scripts"
    (scripts / "compat").mkdir(parents=True)
    (scripts / "compat" / "__init__.py").write_text("")  # a vendored package of that name
    monkeypatch.setattr(sys, "argv", [str(scripts / "train.py")])
    monkeypatch.syspath_prepend(str(scripts))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CompatShadowedError, match=r"compat/__init__.py would be imported .* script directory"):
        _shadowing.check()
    # A bare directory named compat is a namespace package, which Python imports only where its
    # path search does not see this package (an editable install): then it shadows it too.
    (scripts / "compat" / "__init__.py").unlink()
    _shadowing.check()  # this package is on the path here
    installed_at = Path(_shadowing.__file__).resolve().parent.parent
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p and Path(p).resolve() != installed_at])
    with pytest.raises(CompatShadowedError, match=r"compat/ \(a directory without __init__.py\) would be imported"):
        _shadowing.check()
    # This package's own checkout is no shadow.
    monkeypatch.chdir(installed_at)
    monkeypatch.setattr(sys, "argv", [str(installed_at / "job.py")])
    _shadowing.check()
