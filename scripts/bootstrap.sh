#!/usr/bin/env bash
# Creates ./.venv with everything the demo, tests and benchmarks need. Idempotent.
# Prints one line per step; an installer's own output appears only when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

step() {
  local what=$1
  shift
  echo "setup: $what"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "setup: FAILED: $what (the full output is above)" >&2
    exit 1
  fi
}

if [ ! -x .venv/bin/python ]; then
  step "creating .venv" "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
stamp=.venv/.compat-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  step "upgrading pip" python -m pip install -q --upgrade pip
  # torch first and pinned: the CPU build. Anything that depends on torch must find it installed.
  step "installing torch 2.13.0, CPU build (first run: about a minute)" python -m pip install -q "torch==2.13.0"
  # The project accepts Ray from 2.44 on (pyproject.toml); the tests run on the newest tested release.
  step "installing ray[train] 2.60, lightning and the project (first run: a few minutes)" \
    python -m pip install -q "ray[train]==2.60.0" -e ".[test]"
  # TensorFlow for compat.tensorflow's tests: the CPU build, and Keras 2 (tf-keras), which Ray's
  # MultiWorkerMirroredStrategy training needs (Keras 3's fit() refuses its inputs). tf-keras
  # without its dependencies: it names `tensorflow`, which would pull the full build beside this one.
  step "installing tensorflow-cpu 2.21 and tf-keras (first run: about a minute)" \
    python -m pip install -q "tensorflow-cpu==2.21.0"
  step "installing tf-keras 2.21 (without its dependencies)" python -m pip install -q --no-deps "tf-keras==2.21.0"
  touch "$stamp"
fi
echo "setup: ready (.venv)"
