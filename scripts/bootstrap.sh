#!/usr/bin/env bash
# Creates ./.venv with everything the demo, tests and benchmarks need. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
stamp=.venv/.compat-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  python -m pip install -q --upgrade pip
  # torch first and pinned: the CPU build. Anything that depends on torch must find it installed.
  python -m pip install -q "torch==2.13.0"
  python -m pip install -q -e ".[test]"
  touch "$stamp"
fi
