#!/usr/bin/env bash
# The main job: the offline demo (a real AgentScope 2.x agent, scripted model). Bootstraps .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
echo "demo: a real AgentScope 2.x agent on a scripted model, offline (about a minute)"
exec .venv/bin/copaw-context demo "$@"
