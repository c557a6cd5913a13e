#!/usr/bin/env bash
# The test command: lint, type-check, then the whole suite under both settings of
# RAY_TRAIN_V2_ENABLED (each pass also exercises flipping between backends in-process), on
# the newest tested Ray; then the real-Ray run tests on the oldest supported Ray. Each pass
# prints its 15 slowest tests and each step the time it starts at (where CI time goes). Without
# pytest arguments, independent steps run side by side: the codemod's tests beside the first
# pass, the oldest Ray's and the installed package's tests beside the second.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# collect VAR LOG TITLE WHAT: wait for the background job whose pid VAR holds, print its LOG
# under TITLE, and stop the run when it failed.
collect() {
  local pid=${!1} status=0
  [ -n "$pid" ] || return 0
  stamp "$3"
  wait "$pid" || status=$?
  printf -v "$1" '%s' ""
  cat "$2"
  [ "$status" = 0 ] || { echo "$4 failed (above)" >&2; exit 1; }
}
stamp() { printf '== %s (at +%dm%02ds) ==\n' "$1" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)); }
bash scripts/bootstrap.sh
. .venv/bin/activate
# The whole run (no pytest selection): the installs of the installed-package step and of the oldest
# Ray's virtualenv go on in the background while lint and the suite run, logged to .ci-prepare.log;
# their tests wait for them after the suite. One after the other: both build this checkout.
prepare=
installed=$(mktemp -d)  # the installed-package step's builds and virtualenvs
tested=
matrix=
trap 'for job in $prepare $tested $matrix; do kill "$job" 2>/dev/null || true; done; rm -rf "$installed"' EXIT
if [ $# -eq 0 ]; then
  (
    set -e
    [ -n "${COMPAT_SKIP_INSTALLED:-}" ] || INSTALLED_DIR=$installed bash scripts/test_installed.sh prepare
    [ -n "${COMPAT_SKIP_MATRIX:-}" ] || MATRIX_SETUP_ONLY=1 bash scripts/matrix.sh 2.44.1
  ) >.ci-prepare.log 2>&1 &
  prepare=$!
fi
stamp "lint and types"
ruff check compat compat_core v1 v2 migrate tests benchmarks examples
ruff format --check compat compat_core v1 v2 migrate tests benchmarks examples
mypy
# Tests marked one_pass run both backends through the `backend` fixture and do not depend
# on the setting the process started with, so the second pass runs only their v1 cases
# (v1_case, marked in tests/conftest.py). The v1 backend runs on Ray's V1 engine in the first
# pass and on Ray's V2 engine in the second (COMPAT_V1_ENGINE=v2, docs/compatibility.md §28):
# V1 semantics are tested on both. The v2 cases of the other tests (v2_case) run in the second
# pass only, whose process starts under V2 as a V2 user's does; the first pass still runs v2
# fits in a process started under V1 (the one_pass tests' v2 cases, tests/compat/test_switch.py).
#
# The whole run splits the first pass in two processes side by side: the codemod's tests (about
# 9 CPU-minutes, one core; they do not depend on the mode, so they are one_pass) beside the rest.
# Their output follows the pass's. Measured: on 2 busy cores this saves little time.
codemod_tests=(tests/migrate tests/properties/test_codemod_properties.py)
split=()
if [ $# -eq 0 ]; then
  RAY_TRAIN_V2_ENABLED=0 COMPAT_V1_ENGINE=v1 python -m pytest -q -p no:cacheprovider --durations=10 \
    "${codemod_tests[@]}" >.ci-codemod.log 2>&1 &
  tested=$!
  for path in "${codemod_tests[@]}"; do split+=(--ignore="$path"); done
fi
stamp "pytest with RAY_TRAIN_V2_ENABLED=0 (v1 on Ray's V1 engine; not the v2 cases the second pass runs)"
RAY_TRAIN_V2_ENABLED=0 COMPAT_V1_ENGINE=v1 python -m pytest -q -p no:cacheprovider --durations=15 -m "not v2_case" "${split[@]}" "$@"
collect tested .ci-codemod.log "the codemod's tests (run beside the pass above; their output below)" "the codemod's tests"
# The package as users install it (the wheel, not the editable checkout), from outside the tree:
# the codemod install on Python 3.10, 3.12 and 3.13, the runtime on 3.13 (scripts/test_installed.sh).
# And the oldest supported Ray: compat's real-Ray run tests on Ray 2.44.1, in a virtualenv of its
# own (docs/compatibility.md §27); both backends run through the tests' fixtures. Both run beside
# the second pass (each Ray test session starts its own local cluster); their output follows it.
if [ -n "$prepare" ]; then
  stamp "waiting for the background installs"
  wait "$prepare" || { cat .ci-prepare.log >&2; echo "the background installs failed (above)" >&2; exit 1; }
  prepare=
fi
matrix=
if [ $# -eq 0 ] && [ -z "${COMPAT_SKIP_INSTALLED:-}" ]; then  # not with a pytest selection
  stamp "the installed package (beside the next steps; its output at the end)"
  INSTALLED_DIR=$installed bash scripts/test_installed.sh run >.ci-installed.log 2>&1 &
  tested=$!
fi
if [ $# -eq 0 ] && [ -z "${COMPAT_SKIP_MATRIX:-}" ]; then  # not with a pytest selection
  stamp "the oldest supported Ray, scripts/matrix.sh 2.44.1 (beside the next step; its output after it)"
  MATRIX_MODES=0 MATRIX_TESTS="tests/compat/test_switch.py tests/compat/test_public_api.py tests/compat/test_runs.py" \
    bash scripts/matrix.sh 2.44.1 >.ci-matrix.log 2>&1 &
  matrix=$!
fi
stamp "pytest with RAY_TRAIN_V2_ENABLED=1 (v1 on Ray's V2 engine; of the one_pass tests, their v1 cases)"
RAY_TRAIN_V2_ENABLED=1 COMPAT_V1_ENGINE=v2 python -m pytest -q -p no:cacheprovider --durations=15 -m "not one_pass or v1_case" "$@"
collect matrix .ci-matrix.log "the oldest supported Ray's output" "the oldest supported Ray's tests"
collect tested .ci-installed.log "the installed package's output" "the installed package's tests"
stamp "done"
