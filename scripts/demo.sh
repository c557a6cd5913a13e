#!/usr/bin/env bash
# The demo: runs every example under V1 and under V2 semantics and shows what differs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
. .venv/bin/activate
python -m examples.demo "$@"
