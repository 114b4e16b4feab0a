#!/usr/bin/env bash
# A virtual environment with QwenPaw and copaw-context (editable, with its dev extras), for the
# tests on real QwenPaw (tests/qwenpaw/ on QwenPaw 1.1, tests/qwenpaw2/ on QwenPaw 2.2).
# Reinstalled only when pyproject.toml, the package version or the pins below changed
# (scripts/bootstrap.sh keeps the hash); the first install takes about 5 minutes and 1.3 GB.
#   bash scripts/bootstrap_qwenpaw.sh              ./.venv-qwenpaw1, QwenPaw 1.1.12.post3
#   bash scripts/bootstrap_qwenpaw.sh 2            ./.venv-qwenpaw2, QwenPaw 2.2.2.post1
#   bash scripts/bootstrap_qwenpaw.sh VENV PINS    another folder or other pins (QwenPaw 1.1's
#                                                  smoke test; QWENPAW_MAJOR=2 for 2.2's)
# pip check sees nothing wrong with a broken QwenPaw 1.1.12 install (mcp 2 removes what
# AgentScope 1.0.20 imports; fastmcp 4 stops ReMe's memory manager, so no Workspace starts),
# hence the import smoke test after each run.
set -euo pipefail
cd "$(dirname "$0")/.."
# The pins a QwenPaw user needs today (README "Coming from QwenPaw").
QWENPAW1_PINS="qwenpaw==1.1.12.post3 mcp<2 fastmcp<4"
QWENPAW2_PINS="qwenpaw==2.2.2.post1"
major="${QWENPAW_MAJOR:-1}"
if [ "${1:-}" = "1" ] || [ "${1:-}" = "2" ]; then
  major="$1"
  shift
fi
if [ "$major" = "2" ]; then
  venv="${1:-.venv-qwenpaw2}"
  pins="${2:-$QWENPAW2_PINS}"
  # The Workspace and its Runtime (the request path the tests drive), and our 2.2 plugin.
  smoke='import agentscope, qwenpaw.app.workspace.workspace, qwenpaw.runtime.runtime, copaw_context.qwenpaw2'
else
  venv="${1:-.venv-qwenpaw1}"
  pins="${2:-$QWENPAW1_PINS}"
  smoke='import agentscope, qwenpaw.app.workspace.workspace, copaw_context.qwenpaw'
fi
if [ ! -f "$venv/.copaw-context-installed" ]; then
  echo "bootstrap: $venv gets QwenPaw ($pins): about 5 minutes and 1.3 GB the first time"
fi
bash scripts/bootstrap.sh "$venv" "$pins"
if ! "$venv/bin/python" -c "$smoke" >"$venv/smoke.log" 2>&1; then
  cat "$venv/smoke.log" >&2
  rm -f "$venv/.copaw-context-installed" # the next run installs again
  echo "bootstrap: $venv installed but does not import QwenPaw (log above, also in $venv/smoke.log)" >&2
  exit 1
fi
echo "bootstrap: $venv imports agentscope $("$venv/bin/python" -c 'import agentscope; print(agentscope.__version__)') and qwenpaw $("$venv/bin/python" -c 'from importlib.metadata import version; print(version("qwenpaw"))')"
