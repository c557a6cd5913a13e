#!/usr/bin/env bash
# The test command: lint, type-check, then the whole suite under both settings of
# RAY_TRAIN_V2_ENABLED (each pass also exercises flipping between backends in-process), on
# the newest tested Ray; then the real-Ray run tests on the oldest supported Ray. Each pass
# prints its 40 slowest tests and each step the time it starts at (where CI time goes). Without
# pytest arguments, independent steps run side by side with the first pass (below).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# --full (first argument): every test, the heavier scenarios marked `extended` included (see
# "The CI suite and the full suite" in README.md); without it, the CI suite.
full=
if [ "${1:-}" = --full ]; then full=1; shift; fi
first_pass="not v2_case and not extended"
second_pass="(not one_pass or v1_case) and not extended and (v2_case or not extended_rerun)"
if [ -n "$full" ]; then
  first_pass="not v2_case" second_pass="not one_pass or v1_case"
  export COMPAT_FULL_SUITE=1  # the property tests draw their full number of examples
fi
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
# stamp TITLE: the step's title, the time it starts at, and how the machine's CPU was spent since the
# last stamp (busy, of it niced: Ray's workers run at nice 15; steal: taken by the host), so that a
# slow run can be told from a slower suite.
cpu_then=$(head -1 /proc/stat 2>/dev/null || true)
stamp() {
  local now cpu
  now=$(head -1 /proc/stat 2>/dev/null || true)
  cpu=$(printf '%s\n%s\n' "$cpu_then" "$now" | awk 'NF >= 9 {
    for (i = 2; i <= 9; i++) d[i] = $i - d[i]
  } END {
    total = 0; for (i = 2; i <= 9; i++) total += d[i]
    if (total > 0) printf "; CPU since the last step: %d%% busy (%d%% niced), %d%% stolen",
      100 * (total - d[5] - d[6]) / total, 100 * d[3] / total, 100 * d[9] / total
  }')
  cpu_then=$now
  printf '== %s (at +%dm%02ds%s) ==\n' "$1" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$cpu"
}
# idle CMD...: CMD at Linux's lowest priority (SCHED_IDLE: only CPU time nothing else wants), or at
# nice 19 where chrt is missing. At nice 19 a step still shares a core with a Ray worker (nice 15)
# by CFS's weights, 15 to 36: about 30% of it.
idle() { if command -v chrt >/dev/null 2>&1; then chrt --idle 0 "$@"; else nice -n 19 "$@"; fi; }
bash scripts/bootstrap.sh
. .venv/bin/activate
# The whole run (no pytest selection) runs three more steps, each logged to a file whose content
# is printed once it is collected:
# - the package as users install it (the wheel, not the editable checkout), built and installed
#   into fresh virtualenvs, then tested from outside the tree: the codemod install on Python 3.10,
#   3.12 and 3.13 (.ci-installed.log), the runtime on 3.13 (scripts/test_installed.sh);
# - the oldest supported Ray: compat on Ray 2.44.1, in a virtualenv of its own (docs/compatibility.md
#   §27): the switch, the public API and its parity with that Ray, compat's objects as Ray's, and
#   a few real runs of each backend (.ci-matrix.log);
# - the codemod's tests (about 9 CPU-minutes on one core; they do not depend on the mode, so they
#   are one_pass), taken out of the first pass (.ci-codemod.log).
# At most two steps run Ray clusters at a time. Measured in a fresh-clone run (2026-11-29): with the
# Ray 2.44.1 step (26 min) and the installed runtime's compare beside the first pass, the load
# average was 12-14 on 2 cores, the first pass took 85 min, and the installed compare failed as
# Ray's node startup timed out (Ray waits 30 s for its raylet). So the steps without Ray (the
# installs, the codemod's tests on the installed Pythons and on this one) run beside the first
# pass at the lowest priority (SCHED_IDLE, `idle` above: Ray runs its workers at nice 15, and a step
# at nice 10 took the CPU from them), the Ray 2.44.1 step beside the second pass (the shorter), and the installed
# runtime's compare after both.
installed=$(mktemp -d)  # the installed-package step's builds and virtualenvs
tested= matrix= codemod= linted=
trap 'for job in $tested $matrix $codemod $linted; do kill "$job" 2>/dev/null || true; done; rm -rf "$installed"' EXIT
codemod_tests=(tests/migrate tests/properties/test_codemod_properties.py)
split=()
if [ $# -eq 0 ]; then
  if [ -z "${COMPAT_SKIP_INSTALLED:-}" ]; then
    (
      INSTALLED_DIR=$installed idle bash scripts/test_installed.sh prepare
      INSTALLED_DIR=$installed idle bash scripts/test_installed.sh codemod
    ) >.ci-installed.log 2>&1 &
    tested=$!
  fi
  # Each of tests/migrate's files runs against the installed codemod on one of 3.10, 3.12 and 3.13
  # (the installed step); here, on this Python, the codemod's property tests, and tests/migrate
  # too when the installed step is skipped (about 5 of this step's 9 CPU-minutes beside the pass).
  here=(tests/properties/test_codemod_properties.py)
  [ -z "${COMPAT_SKIP_INSTALLED:-}" ] || here=("${codemod_tests[@]}")
  # The one Ray test of tests/migrate (both settings run it) at nice 19, not SCHED_IDLE: the Ray
  # cluster it starts inherits its priority, and at SCHED_IDLE beside a busy pass its raylet did
  # not start within Ray's 30 s ("The current node timed out during startup", 2026-12-02).
  ray_test=tests/migrate/test_tune.py::test_migrated_ray_2_6_tune_examples_run_on_real_ray
  (
    RAY_TRAIN_V2_ENABLED=0 COMPAT_V1_ENGINE=v1 nice -n 19 python -m pytest -q -p no:cacheprovider "$ray_test" &&
      RAY_TRAIN_V2_ENABLED=0 COMPAT_V1_ENGINE=v1 idle python -m pytest -q -p no:cacheprovider --durations=10 \
        --deselect "$ray_test" "${here[@]}"
  ) >.ci-codemod.log 2>&1 &
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
# fits in a process started under V1 (the one_pass tests' v2 cases, tests/compat_core/test_switch.py).
stamp "pytest with RAY_TRAIN_V2_ENABLED=0 (v1 on Ray's V1 engine; not the v2 cases the second pass runs)"
status=0
RAY_TRAIN_V2_ENABLED=0 COMPAT_V1_ENGINE=v1 python -m pytest -q -p no:cacheprovider --durations=40 --junitxml=.ci-pass1.xml -m "$first_pass" "${split[@]}" "$@" || status=$?
python scripts/durations.py .ci-pass1.xml  # also when it failed
[ "$status" = 0 ] || exit "$status"
collect linted .ci-lint.log "lint and types (run beside the pass above; their output below)" "lint and types"
collect codemod .ci-codemod.log "the codemod's tests (run beside the pass above; their output below)" "the codemod's tests"
# On Ray 2.44.1, of test_runs.py: one rich run of each backend (its fixture) read many ways, flipping
# the switch between fits, a worker's failure (all of test_runs there took 26 min beside the first pass).
matrix_runs=(
  test_two_workers_finish_on_two_cores test_result_metrics_follow_each_backend test_metrics_dataframe_rows
  test_validation_in_both_forms_merges_into_checkpoint_metrics test_after_report_sees_every_worker_once_per_round
  test_every_workers_reports_are_kept test_a_new_driver_reads_back_what_fit_returned
  test_flipping_the_variable_between_runs_in_one_process
  test_after_exception_gets_the_worker_error_and_results_survive
)
if [ $# -eq 0 ] && [ -z "${COMPAT_SKIP_MATRIX:-}" ]; then
  (
    # One build of this checkout at a time: the installed step's first.
    while [ -n "$tested" ] && [ ! -e "$installed/.prepared" ] && kill -0 "$tested" 2>/dev/null; do sleep 5; done
    MATRIX_MODES=0 MATRIX_TESTS="tests/compat_core/test_switch.py tests/compat/test_public_api.py tests/compat/test_parity.py \
tests/compat/test_inside_ray.py tests/compat/test_restore.py::test_a_corrupt_v2_snapshot_is_rays_error_on_every_release \
$(printf 'tests/compat/test_runs.py::%s ' "${matrix_runs[@]}")" \
      bash scripts/matrix.sh 2.44.1
  ) >.ci-matrix.log 2>&1 &
  matrix=$!
fi
stamp "pytest with RAY_TRAIN_V2_ENABLED=1 (v1 on Ray's V2 engine; of the one_pass tests, their v1 cases)"
status=0
RAY_TRAIN_V2_ENABLED=1 COMPAT_V1_ENGINE=v2 python -m pytest -q -p no:cacheprovider --durations=40 --junitxml=.ci-pass2.xml -m "$second_pass" "$@" || status=$?
python scripts/durations.py .ci-pass2.xml  # also when it failed
[ "$status" = 0 ] || exit "$status"
collect tested .ci-installed.log "the installed package's codemod (run beside the first pass)" "the installed package's tests"
collect matrix .ci-matrix.log "the oldest supported Ray's output (run beside the second pass)" "the oldest supported Ray's tests"
if [ $# -eq 0 ] && [ -z "${COMPAT_SKIP_INSTALLED:-}" ]; then
  stamp "the installed package's runtime (after the passes: it starts Ray clusters of its own)"
  INSTALLED_DIR=$installed bash scripts/test_installed.sh runtime
fi
stamp "done"
