#!/usr/bin/env bash
# The demo: runs the seed examples under V1 and under V2 with `compat compare`, prints the
# side-by-side tables and writes an HTML report with the curves. Extra arguments go to the
# examples (e.g. --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
. .venv/bin/activate
mkdir -p build
status=0
python -m compat compare --html build/compare.html --json build/compare.json -- examples/seeds.py "$@" || status=$?
echo "Open build/compare.html in a browser for the tables and the curves."
exit $status
