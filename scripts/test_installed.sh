#!/usr/bin/env bash
# The package as users install it, not the editable checkout: the sdist and the wheel built from
# it (python -m build), installed with pip into fresh virtualenvs, and tested from a directory
# where the repository's sources are not importable (only tests/, docs/ and examples/ are copied
# there: the tests read them as data).
#
#   1. The codemod install (what the pre-commit hooks install), on each Python of
#      INSTALLED_CODEMOD_PYTHONS (default 3.10, 3.12 and 3.13; the suite's own run is on 3.11):
#      no Ray, torch or pandas is installed;
#      `python -m migrate` rewrites a file that needs libcst's forms; `import compat` says how
#      to install the runtime; the codemod's test suite (tests/migrate) passes, its files shared
#      out among the Pythons (each file on one of them).
#   2. The runtime on Python INSTALLED_RUNTIME_PYTHON (default 3.13) with Ray 2.60
#      (`ray-train-compat[runtime]`, no torch): `compare` runs a one-fit script under each
#      setting (the script asserts its result in each mode) and must explain every difference.
#
# Needs pyenv's interpreters (`pyenv versions`) and the package registry. Run by scripts/test.sh.
#
#   bash scripts/test_installed.sh                          # build, install and test, in a temporary directory
#   INSTALLED_DIR=d bash scripts/test_installed.sh prepare  # only build and install, into d
#   INSTALLED_DIR=d bash scripts/test_installed.sh codemod  # then test d's codemod installs (1.)
#   INSTALLED_DIR=d bash scripts/test_installed.sh runtime  # then d's runtime (2.), and remove d
#   INSTALLED_DIR=d bash scripts/test_installed.sh run      # both tests, then remove d
#
# scripts/test.sh prepares and tests the codemod installs beside the suite's first pass (no Ray:
# installing waits on the network and the disk more than on the cores the suite needs), and the
# runtime after the suite's passes: its compare starts a Ray cluster per setting, which beside the
# passes' own (load average 12 on 2 cores) timed out starting ("The current node timed out during
# startup"; Ray waits 30 s for its raylet).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
phase=${1:-all}
case "$phase" in
  all | prepare | codemod | runtime | run) ;;
  *) echo "usage: $0 [prepare|codemod|runtime|run]" >&2; exit 2 ;;
esac
read -r -a codemod_pythons <<<"${INSTALLED_CODEMOD_PYTHONS:-3.10 3.12 3.13}"
runtime_python=${INSTALLED_RUNTIME_PYTHON:-3.13}
if [ -n "${INSTALLED_DIR:-}" ]; then
  work=$(mkdir -p "$INSTALLED_DIR" && cd "$INSTALLED_DIR" && pwd)
else
  [ "$phase" = all ] || { echo "$0 $phase: set INSTALLED_DIR (where the two phases meet)" >&2; exit 2; }
  work=$(mktemp -d)
fi
case "$phase" in prepare | codemod) ;; *) trap 'rm -rf "$work"' EXIT ;; esac  # the last phase removes it

interpreter() {  # $1: a version such as 3.13; prints pyenv's newest interpreter of that version
  local root found
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  found=$(ls -d "$root"/versions/"$1".*/bin/python 2>/dev/null | sort -V | tail -1)
  [ -n "$found" ] || { echo "installed: no Python $1 (pyenv install $1)" >&2; exit 1; }
  echo "$found"
}

quiet() {  # runs a command; shows its output only when it fails
  local log=$work/step.log
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "installed: FAILED: $*" >&2
    exit 1
  fi
}

prepare() {
  echo "== installed package: building the sdist and the wheel =="
  rm -rf "$work/dist" "$work/run" "$work/.prepared"
  quiet .venv/bin/python -m build --outdir "$work/dist" .
  local wheel venv version
  wheel=$(ls "$work"/dist/*.whl)
  mkdir -p "$work/run"
  cp -r tests docs examples pyproject.toml "$work/run/"
  find "$work/run" -name __pycache__ -prune -exec rm -rf {} +
  for version in "${codemod_pythons[@]}"; do
    echo "== installed package: installing the codemod on Python $version =="
    venv=$work/codemod-$version
    rm -rf "$venv"
    quiet "$(interpreter "$version")" -m venv "$venv"
    quiet "$venv/bin/python" -m pip install -q --upgrade pip
    quiet "$venv/bin/python" -m pip install -q "$wheel"
    if "$venv/bin/python" -m pip show ray torch pandas matplotlib >/dev/null 2>&1; then
      echo "installed: the codemod install pulled in the runtime: $("$venv/bin/python" -m pip list)" >&2
      exit 1
    fi
    # Checked: the codemod alone. Its test tools go beside it only now.
    quiet "$venv/bin/python" -m pip install -q "pytest>=8" "hypothesis>=6.100" "hypothesmith>=0.3" "pyflakes>=3"
  done
  echo "== installed package: installing the runtime on Python $runtime_python with Ray 2.60 =="
  venv=$work/runtime
  rm -rf "$venv"
  quiet "$(interpreter "$runtime_python")" -m venv "$venv"
  quiet "$venv/bin/python" -m pip install -q --upgrade pip
  quiet "$venv/bin/python" -m pip install -q "${wheel}[runtime]" "ray[train]==2.60.0"
  touch "$work/.prepared"
}

prepared() {
  [ -f "$work/.prepared" ] || { echo "installed: $work was not prepared (INSTALLED_DIR=$work $0 prepare)" >&2; exit 1; }
}

test_codemod() {
  prepared
  local run=$work/run venv version message
  cat >"$work/needs_libcst.py" <<'EOF'
def train_func(config):
    from ray.air import session  # an import inside a function: libcst's form, not the fast one

    session.report({"loss": 1.0}, checkpoint=config["checkpoint"])
EOF
  # The codemod's test files, shared out among the Pythons (file i on Python i mod n): each
  # file runs once against an installed codemod, every Python runs the CLI and a share of the
  # suite (the whole suite three times was about a quarter of the machine's CPU beside the first
  # pass, slowing it; the suite's own run, on 3.11, runs every file).
  local files=() shard index=0
  for path in "$run"/tests/migrate/test_*.py; do files+=("tests/migrate/${path##*/}"); done
  for version in "${codemod_pythons[@]}"; do
    shard=()
    for ((i = index; i < ${#files[@]}; i += ${#codemod_pythons[@]})); do shard+=("${files[i]}"); done
    index=$((index + 1))
    echo "== installed package: the codemod install on Python $version (${#shard[@]} of ${#files[@]} test files) =="
    venv=$work/codemod-$version
    cp "$work/needs_libcst.py" "$run/job.py"
    (cd "$run" && "$venv/bin/ray-train-migrate" --exit-zero job.py)
    grep -q "    from ray import train" "$run/job.py" && grep -q "    train.report(" "$run/job.py" || {
      echo "installed: the libcst forms did not rewrite job.py:" >&2; cat "$run/job.py" >&2; exit 1
    }
    rm "$run/job.py"
    if message=$(cd "$run" && "$venv/bin/python" -c "import compat" 2>&1); then
      echo "installed: import compat succeeded without Ray" >&2; exit 1
    fi
    echo "$message" | grep -q 'pip install "ray-train-compat\[runtime\]"' || {
      echo "installed: import compat without Ray does not say what to install:" >&2; echo "$message" >&2; exit 1
    }
    (cd "$run" && "$venv/bin/python" -c "import migrate, sys; assert migrate.__file__.startswith(sys.prefix), migrate.__file__")
    # A project's own migrate.py in the working directory (a database migration script): `python -m
    # migrate` would run it (docs/migrate.md says so); the console script runs the codemod.
    mkdir -p "$work/own-migrate" && printf 'print("the project migration script ran")\n' >"$work/own-migrate/migrate.py"
    cp "$work/needs_libcst.py" "$work/own-migrate/job.py"
    message=$(cd "$work/own-migrate" && "$venv/bin/ray-train-migrate" --check job.py 2>&1) && {
      echo "installed: ray-train-migrate --check passed a V1 file beside a migrate.py: $message" >&2; exit 1
    }
    echo "$message" | grep -q "^job.py:[0-9]*:[0-9]*: RTM" && ! echo "$message" | grep -q "migration script ran" || {
      echo "installed: ray-train-migrate beside a migrate.py did not run the codemod: $message" >&2; exit 1
    }
    rm -rf "$work/own-migrate"
    (cd "$run" && "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "not ray" "${shard[@]}")
  done
}

test_runtime() {
  prepared
  local run=$work/run venv
  echo "== installed package: the runtime on Python $runtime_python with Ray 2.60 =="
  venv=$work/runtime
  cp "$repo/scripts/smoke_fit.py" "$run/smoke_fit.py"
  cd "$run"
  "$venv/bin/python" -m compat compare --json "$work/compare.json" --html "$work/compare.html" --workdir "$work/compare" \
    -- smoke_fit.py \
    >"$work/compare.txt" 2>&1 || { cat "$work/compare.txt" >&2; echo "installed: compare failed" >&2; exit 1; }
  "$venv/bin/python" - "$work/compare.json" "$work/compare.html" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
assert [r["exit_status"] for r in report["runs"].values()] == [0, 0], report["runs"]  # each mode's asserts held
assert len(report["fits"]) == 1 and report["verdict"]["ok"], report["verdict"]
assert "ray-train-compat[plot]" in open(sys.argv[2]).read()  # no matplotlib here: the page says how to get plots
print(f"installed: compare ran the script under V1 and V2: {report['verdict']['text']}")
EOF
  # A project's own package named as one of the wheel's beside its script: import compat names it.
  local name shadow=$work/shadowed
  for name in v2 compat_core; do
    rm -rf "$shadow" && mkdir -p "$shadow/$name" && : >"$shadow/$name/__init__.py"
    printf 'import compat\n' >"$shadow/job.py"
    if message=$(cd "$shadow" && "$venv/bin/python" job.py 2>&1); then
      echo "installed: import compat beside a $name/ package succeeded" >&2; exit 1
    fi
    echo "$message" | tail -1 | grep -q "^compat_core.errors.CompatShadowedError: $shadow/$name/__init__.py would be imported as \`$name\`" || {
      echo "installed: import compat beside a $name/ package did not name it:" >&2; echo "$message" >&2; exit 1
    }
  done
  rm -rf "$shadow" && mkdir -p "$shadow/migrate" && : >"$shadow/migrate/__init__.py"
  printf 'import compat, sys\nassert "migrate" not in sys.modules\n' >"$shadow/job.py"
  (cd "$shadow" && "$venv/bin/python" job.py) || { echo "installed: import compat beside a migrate/ failed" >&2; exit 1; }
  rm -rf "$shadow"
  echo "installed: ok"
}

case "$phase" in
  prepare) prepare ;;
  codemod) test_codemod ;;
  runtime) test_runtime ;;
  run) test_codemod; test_runtime ;;  # not with &&: set -e holds inside each function only so
  all) prepare; test_codemod; test_runtime ;;
esac
