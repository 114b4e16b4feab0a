#!/usr/bin/env bash
# The whole test suite: lint, type check, schema freshness, pytest. Bootstraps .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check copaw_context tests scripts benchmarks
.venv/bin/ruff format --check copaw_context tests scripts benchmarks
.venv/bin/mypy
.venv/bin/mypy --strict benchmarks
.venv/bin/python scripts/gen_schema.py --check
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
