#!/usr/bin/env bash
# The test command: lint, type-check, then the whole suite under both settings of
# RAY_TRAIN_V2_ENABLED (each pass also exercises flipping between backends in-process), on
# the newest tested Ray; then the real-Ray run tests on the oldest supported Ray. Each pass
# prints its 40 slowest tests and each step the time it starts at (where CI time goes). Without
# pytest arguments, independent steps run side by side with the first pass (below).
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
# The whole run (no pytest selection) starts three steps in the background, each logged to a file
# whose content is printed after the second pass:
# - the package as users install it (the wheel, not the editable checkout), built and installed
#   into fresh virtualenvs, then tested from outside the tree: the codemod install on Python 3.10,
#   3.12 and 3.13, the runtime on 3.13 (scripts/test_installed.sh; .ci-installed.log);
# - the oldest supported Ray: compat's real-Ray run tests on Ray 2.44.1, in a virtualenv of its own
#   (docs/compatibility.md §27), both backends through the tests' fixtures; its install waits for
#   the first step's (both build this checkout) (.ci-matrix.log);
# - the codemod's tests (about 9 CPU-minutes on one core; they do not depend on the mode, so they
#   are one_pass), taken out of the first pass (.ci-codemod.log).
# Measured: the first pass's real-Ray tests leave a core idle much of the time (Ray's polls, actor
# starts), so work beside it costs it little; the second pass is shorter and was slowed by the two
# install-bound steps when they ran beside it. The installed-package and codemod steps run at the
# lowest priority (nice 19): the two passes are the run's critical path. Not nice 10, as before:
# Ray runs its worker processes at nice 15 (its worker_niceness), so a step at nice 10 took the
# CPU from the first pass's training workers (seen in `top` during a fresh-clone run: the codemod
# step's pytest at 75% of a core, the first pass's workers at nice 15-19 with the rest) while the
# first pass ran 2.5 times slower than it had (81 min); at 19 a step gets what the workers leave.
# The Ray 2.44.1 step keeps the passes' priority: its own Ray workers run at nice 15 as theirs do.
installed=$(mktemp -d)  # the installed-package step's builds and virtualenvs
tested= matrix= codemod= linted=
trap 'for job in $tested $matrix $codemod $linted; do kill "$job" 2>/dev/null || true; done; rm -rf "$installed"' EXIT
codemod_tests=(tests/migrate tests/properties/test_codemod_properties.py)
split=()
if [ $# -eq 0 ]; then
  if [ -z "${COMPAT_SKIP_INSTALLED:-}" ]; then
    (
      INSTALLED_DIR=$installed nice -n 19 bash scripts/test_installed.sh prepare
      INSTALLED_DIR=$installed nice -n 19 bash scripts/test_installed.sh run
    ) >.ci-installed.log 2>&1 &
    tested=$!
  fi
  if [ -z "${COMPAT_SKIP_MATRIX:-}" ]; then
    (
      # One build of this checkout at a time: the installed step's first.
      while [ -n "$tested" ] && [ ! -e "$installed/.prepared" ] && kill -0 "$tested" 2>/dev/null; do sleep 5; done
      MATRIX_MODES=0 MATRIX_TESTS="tests/compat/test_switch.py tests/compat/test_public_api.py tests/compat/test_parity.py tests/compat/test_runs.py" \
        bash scripts/matrix.sh 2.44.1
    ) >.ci-matrix.log 2>&1 &
    matrix=$!
  fi
  RAY_TRAIN_V2_ENABLED=0 COMPAT_V1_ENGINE=v1 nice -n 19 python -m pytest -q -p no:cacheprovider --durations=10 \
    "${codemod_tests[@]}" >.ci-codemod.log 2>&1 &
  codemod=$!
  for path in "${codemod_tests[@]}"; do split+=(--ignore="$path"); done
fi
lint() {
  ruff check compat compat_core v1 v2 migrate tests benchmarks examples
  ruff format --check compat compat_core v1 v2 migrate tests benchmarks examples
  mypy
}
if [ $# -eq 0 ]; then  # the whole run: beside the first pass (about 40 s off the critical path)
  stamp "lint and types (beside the first pass; their output after it)"
  lint >.ci-lint.log 2>&1 &
  linted=$!
else
  stamp "lint and types"
  lint
fi
# Tests marked one_pass run both backends through the `backend` fixture and do not depend
# on the setting the process started with, so the second pass runs only their v1 cases
# (v1_case, marked in tests/conftest.py). The v1 backend runs on Ray's V1 engine in the first
# pass and on Ray's V2 engine in the second (COMPAT_V1_ENGINE=v2, docs/compatibility.md §28):
# V1 semantics are tested on both. The v2 cases of the other tests (v2_case) run in the second
# pass only, whose process starts under V2 as a V2 user's does; the first pass still runs v2
# fits in a process started under V1 (the one_pass tests' v2 cases, tests/compat/test_switch.py).
stamp "pytest with RAY_TRAIN_V2_ENABLED=0 (v1 on Ray's V1 engine; not the v2 cases the second pass runs)"
RAY_TRAIN_V2_ENABLED=0 COMPAT_V1_ENGINE=v1 python -m pytest -q -p no:cacheprovider --durations=40 -m "not v2_case" "${split[@]}" "$@"
collect linted .ci-lint.log "lint and types (run beside the pass above; their output below)" "lint and types"
collect codemod .ci-codemod.log "the codemod's tests (run beside the pass above; their output below)" "the codemod's tests"
stamp "pytest with RAY_TRAIN_V2_ENABLED=1 (v1 on Ray's V2 engine; of the one_pass tests, their v1 cases)"
RAY_TRAIN_V2_ENABLED=1 COMPAT_V1_ENGINE=v2 python -m pytest -q -p no:cacheprovider --durations=40 -m "not one_pass or v1_case" "$@"
collect tested .ci-installed.log "the installed package's output (run beside the passes)" "the installed package's tests"
collect matrix .ci-matrix.log "the oldest supported Ray's output (run beside the passes)" "the oldest supported Ray's tests"
stamp "done"
