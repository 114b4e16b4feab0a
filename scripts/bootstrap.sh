#!/usr/bin/env bash
# Create a virtual environment (Python >= 3.11) and install copaw-context with its dev extras.
# Re-installs only when pyproject.toml, the package version or the pinned AgentScope changed
# since the last run.
#   bash scripts/bootstrap.sh                  ./.venv, the newest AgentScope the pyproject admits
#   bash scripts/bootstrap.sh .venv-as1 agentscope==1.0.21   a venv for the AgentScope 1.x adapter
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/_progress.sh
source scripts/_progress.sh
PYTHON="${PYTHON:-python3}"
venv="${1:-.venv}"
pin="${2:-}"
if [ ! -x "$venv/bin/python" ]; then
  echo "bootstrap: creating $venv ($("$PYTHON" --version 2>&1)) and upgrading its pip"
  heartbeat "bootstrap: $venv (python -m venv)" "" "$PYTHON" -m venv "$venv"
  heartbeat "bootstrap: $venv (pip upgrade)" "" \
    "$venv/bin/python" -m pip install --quiet --progress-bar off --upgrade pip
fi
stamp="$venv/.copaw-context-installed"
# The package's version (copaw_context.__version__, which pip's metadata is built from) counts
# too: a new version reinstalls, so `pip show` never reports an older one than --version.
version_line="$(grep -E '^__version__ = ' copaw_context/__init__.py)"
want="$(cat pyproject.toml <(echo "$version_line") <(echo "$pin") | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log="$venv/install.log"
  echo "bootstrap: installing copaw-context[dev] ${pin:+with $pin }into $venv (about 1-2 minutes the first time; log: $log)"
  started=$SECONDS
  # A line every 8 s while pip runs: that it is still going and the phase pip is in.
  # shellcheck disable=SC2086  # $pin is one requirement or nothing
  if ! heartbeat "bootstrap: $venv" "$log" \
    "$venv/bin/python" -m pip install --progress-bar off -e ".[dev]" $pin; then
    cat "$log" >&2
    echo "bootstrap: installing copaw-context into $venv failed (log above, also in $log)" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
  echo "bootstrap: $venv ready in $((SECONDS - started)) s"
else
  echo "bootstrap: $venv up to date"
fi
