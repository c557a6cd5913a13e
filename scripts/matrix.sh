#!/usr/bin/env bash
# The Ray release matrix: compat's real-Ray tests on each chosen Ray release, each in a
# virtualenv of its own, in both modes (RAY_TRAIN_V2_ENABLED=0 with the v1 backend on Ray's
# V1 engine, then 1 with it on V2's engine, without the tests that already cover both
# backends), as scripts/test.sh runs them on the newest release.
#
#   bash scripts/matrix.sh                 # 2.44.1 2.50.1 2.53.0 2.55.0 2.60.0
#   bash scripts/matrix.sh 2.44.1 2.60.0   # the releases CI runs
#
# MATRIX_TESTS: the pytest selection (default: every test but the codemod's; CI runs the
# run tests, tests/compat_core/test_switch.py test_public_api.py test_parity.py test_runs.py); MATRIX_MODES: the settings of
# RAY_TRAIN_V2_ENABLED to run (default "0 1"; the tests run both backends through their
# fixtures either way, the setting only changes the one the process starts with);
# MATRIX_MODE1_MARKER: the pytest -m expression of the second mode (default "not one_pass or
# v1_case", as CI: of the one_pass tests, their v1 cases, on Ray's V2 engine; "" runs them all);
# MATRIX_DIR: where the virtualenvs live (default .matrix/, reused between runs); MATRIX_SETUP_ONLY=1:
# install the releases' virtualenvs and stop (scripts/test.sh does it while the suite runs). Prints a
# Markdown table, also written to $MATRIX_DIR/results.md, for docs/compatibility.md. Exits 1 if any
# release failed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
MATRIX_DIR=${MATRIX_DIR:-.matrix}
releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=(2.44.1 2.50.1 2.53.0 2.55.0 2.60.0)
read -r -a modes <<<"${MATRIX_MODES:-0 1}"
# Default: every test that depends on Ray (the codemod's do not).
read -r -a tests <<<"${MATRIX_TESTS:-tests --ignore=tests/migrate}"
mode1_marker=${MATRIX_MODE1_MARKER-not one_pass or v1_case}  # set but empty: no marker
mkdir -p "$MATRIX_DIR"

pandas_pin() {  # $1: release. Ray Data's from_pandas fails on pandas 3 before Ray 2.55
  if "$PYTHON" -c "import sys; v = tuple(map(int, sys.argv[1].split('.')[:2])); sys.exit(0 if v < (2, 55) else 1)" "$1"; then
    echo "pandas<3"
  fi
}

setup() {  # $1: release; creates $MATRIX_DIR/ray-$1, and updates it when the pins change
  local venv=$MATRIX_DIR/ray-$1 log=$MATRIX_DIR/ray-$1.setup.log
  local spec="ray[train]==$1 -e .[test] $(pandas_pin "$1")"
  [ "$(cat "$venv/.installed" 2>/dev/null)" = "$spec" ] && return 0
  echo "matrix: installing Ray $1 into $venv (log: $log)"
  {
    { [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"; } &&
      "$venv/bin/python" -m pip install -q --upgrade pip &&
      "$venv/bin/python" -m pip install -q "torch==2.13.0" &&
      "$venv/bin/python" -m pip install -q "ray[train]==$1" -e ".[test]" $(pandas_pin "$1")
  } >"$log" 2>&1 || { echo "matrix: FAILED to install Ray $1, see $log" >&2; return 1; }
  echo "$spec" >"$venv/.installed"  # what was installed: a changed pin reinstalls
}

summary() {  # the last line pytest printed: "N passed, M failed in T s"
  grep -E '(passed|failed|error)' "$1" | tail -1 | sed -E 's/=+//g; s/^ +| +$//g'
}

if [ -n "${MATRIX_SETUP_ONLY:-}" ]; then
  for release in "${releases[@]}"; do setup "$release"; done
  exit 0
fi

rows=()
status=0
for release in "${releases[@]}"; do
  if ! setup "$release"; then
    rows+=("| $release | not installed | not installed |")
    status=1
    continue
  fi
  py=$MATRIX_DIR/ray-$release/bin/python
  cells=("not run" "not run")
  for mode in "${modes[@]}"; do
    log=$MATRIX_DIR/ray-$release.v2-$mode.log
    marker=()
    [ "$mode" = 1 ] && [ -n "$mode1_marker" ] && marker=(-m "$mode1_marker")
    echo "matrix: Ray $release, RAY_TRAIN_V2_ENABLED=$mode (log: $log)"
    engine=v1
    [ "$mode" = 1 ] && engine=v2  # as scripts/test.sh: v1 on V2's engine in the second pass
    if RAY_TRAIN_V2_ENABLED=$mode COMPAT_V1_ENGINE=$engine "$py" -m pytest -q -p no:cacheprovider --durations=15 "${marker[@]}" "${tests[@]}" >"$log" 2>&1; then
      cells[$mode]="$(summary "$log")"
    else
      cells[$mode]="**FAILED**: $(summary "$log")"
      status=1
    fi
    sed -n '/slowest .*durations/,/^$/p' "$log"  # where this step's time goes
  done
  rows+=("| $release | ${cells[0]} | ${cells[1]} |")
done

{
  echo "| Ray | \`RAY_TRAIN_V2_ENABLED=0\` | \`RAY_TRAIN_V2_ENABLED=1\` |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Tests: \`${tests[*]}\` (\`bash scripts/matrix.sh ${releases[*]}\`, $(date -u +%Y-%m-%d))."
} | tee "$MATRIX_DIR/results.md"
exit $status
