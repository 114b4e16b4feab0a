#!/usr/bin/env bash
# Create ./.venv (Python >= 3.11) and install copaw-context with its dev extras.
# Re-installs only when pyproject.toml changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
stamp=".venv/.copaw-context-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log=".venv/install.log"
  if ! .venv/bin/python -m pip install --quiet -e ".[dev]" >"$log" 2>&1; then
    cat "$log" >&2
    echo "bootstrap: installing copaw-context failed (log above, also in $log)" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
