#!/usr/bin/env bash
# The main job: the offline demo (a real AgentScope 2.x agent, scripted model). Bootstraps .venv.
# Paths you pass (--workspace, --plot, --config) are taken from the folder you run it in.
set -euo pipefail
here=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)
(cd "$root" && bash scripts/bootstrap.sh)
echo "demo: a real AgentScope 2.x agent on a scripted model, offline (a few seconds)"
cd "$here"
exec "$root/.venv/bin/copaw-context" demo "$@"
