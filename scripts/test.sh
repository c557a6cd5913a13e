#!/usr/bin/env bash
# The test command: lint, type-check, then the whole suite under both settings of
# RAY_TRAIN_V2_ENABLED (each pass also exercises flipping between backends in-process).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
. .venv/bin/activate
ruff check compat v1 v2 migrate tests benchmarks examples
ruff format --check compat v1 v2 migrate tests benchmarks examples
mypy
for setting in 0 1; do
  echo "== pytest with RAY_TRAIN_V2_ENABLED=$setting =="
  RAY_TRAIN_V2_ENABLED=$setting python -m pytest -q -p no:cacheprovider "$@"
done
