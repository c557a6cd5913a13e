#!/usr/bin/env bash
# The test command: lint, type-check, then the whole suite under both settings of
# RAY_TRAIN_V2_ENABLED (each pass also exercises flipping between backends in-process), on
# the newest tested Ray; then the real-Ray run tests on the oldest supported Ray. Each pass
# prints its 15 slowest tests (where CI time goes).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
. .venv/bin/activate
ruff check compat compat_core v1 v2 migrate tests benchmarks examples
ruff format --check compat compat_core v1 v2 migrate tests benchmarks examples
mypy
# Tests marked one_pass run both backends through the `backend` fixture and do not depend
# on the setting the process started with, so the second pass runs only their v1 cases
# (v1_case, marked in tests/conftest.py). The v1 backend runs on Ray's V1 engine in the first
# pass and on Ray's V2 engine in the second (COMPAT_V1_ENGINE=v2, docs/compatibility.md §28):
# V1 semantics are tested on both.
echo "== pytest with RAY_TRAIN_V2_ENABLED=0 (v1 on Ray's V1 engine) =="
RAY_TRAIN_V2_ENABLED=0 COMPAT_V1_ENGINE=v1 python -m pytest -q -p no:cacheprovider --durations=15 "$@"
echo "== pytest with RAY_TRAIN_V2_ENABLED=1 (v1 on Ray's V2 engine; of the one_pass tests, their v1 cases) =="
RAY_TRAIN_V2_ENABLED=1 COMPAT_V1_ENGINE=v2 python -m pytest -q -p no:cacheprovider --durations=15 -m "not one_pass or v1_case" "$@"
# The package as users install it (the wheel, not the editable checkout), from outside the tree:
# the codemod install on Python 3.10, 3.12 and 3.13, the runtime on 3.13 (scripts/test_installed.sh).
if [ $# -eq 0 ] && [ -z "${COMPAT_SKIP_INSTALLED:-}" ]; then  # not with a pytest selection
  bash scripts/test_installed.sh
fi
# The oldest supported Ray: compat's real-Ray run tests on Ray 2.44.1, in a virtualenv of its
# own (docs/compatibility.md §27). Both backends run through the tests' fixtures.
if [ $# -eq 0 ] && [ -z "${COMPAT_SKIP_MATRIX:-}" ]; then  # not with a pytest selection
  echo "== the oldest supported Ray (scripts/matrix.sh 2.44.1) =="
  MATRIX_MODES=0 MATRIX_TESTS="tests/compat/test_switch.py tests/compat/test_public_api.py tests/compat/test_runs.py" \
    bash scripts/matrix.sh 2.44.1
fi
