#!/usr/bin/env bash
# The whole test suite: lint, type checks, schema freshness, and pytest against both AgentScope
# majors: .venv (AgentScope 2.x: every test) and .venv-as1 (AgentScope 1.0.21: the shared
# invariants, the host-neutral core tests, the real-agent reliability and ported peer tests,
# the command line and docs tests but the 2.x-only demo and bench ones, the 1.x adapter's),
# and on real QwenPaw: .venv-qwenpaw1 (QwenPaw 1.1.12, AgentScope 1.0.20: tests/qwenpaw/) and
# .venv-qwenpaw2 (QwenPaw 2.2.2, AgentScope 2.0.10: tests/qwenpaw2/).
# Bootstraps the environments (in parallel; each is reinstalled only when pyproject.toml, the
# package version or its pins changed; each QwenPaw's takes minutes the first time).
# Arguments go to the 2.x pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/_progress.sh
source scripts/_progress.sh
# agentscope 1.0.21 declares no upper bounds; these are the releases it was made with (mcp 2
# and SQLAlchemy 2.1 break its import, and it imports tqdm without declaring it).
AS1_PINS="agentscope==1.0.21 mcp<2 sqlalchemy<2.1 tqdm"
# The oldest supported releases of each major (QwenPaw 2.2.2 pins 2.0.10, QwenPaw 1.1.12
# runs 1.0.20): the adapter tests, the invariants and the private-API pins run on them too.
OLDEST_AS2="agentscope==2.0.10"
OLDEST_AS1="agentscope==1.0.20 mcp<2 sqlalchemy<2.1 tqdm"

step() { echo "== $* ($(date +%H:%M:%S)) =="; }

step "environments: .venv (AgentScope 2.x), .venv-as1 (1.0.21), .venv-as2.0.10, .venv-as1.0.20, .venv-qwenpaw1 (QwenPaw 1.1.12), .venv-qwenpaw2 (QwenPaw 2.2.2)"
bash scripts/bootstrap.sh & as2_env=$!
bash scripts/bootstrap.sh .venv-as1 "$AS1_PINS" & as1_env=$!
bash scripts/bootstrap_qwenpaw.sh & qwenpaw_env=$!
wait "$as2_env"
wait "$as1_env"
wait "$qwenpaw_env"
bash scripts/bootstrap.sh .venv-as2.0.10 "$OLDEST_AS2" & oldest2_env=$!
bash scripts/bootstrap.sh .venv-as1.0.20 "$OLDEST_AS1" & oldest1_env=$!
bash scripts/bootstrap_qwenpaw.sh 2 & qwenpaw2_env=$!
wait "$oldest2_env"
wait "$oldest1_env"
wait "$qwenpaw2_env"

step "lint: ruff check, ruff format --check"
.venv/bin/ruff check copaw_context tests scripts benchmarks
.venv/bin/ruff format --check copaw_context tests scripts benchmarks
step "types: mypy (strict on the package, the benchmarks, the 1.x adapter, the QwenPaw hosts); about a minute"
# The QwenPaw hosts' checks go alongside the others (their own venvs and caches).
.venv-qwenpaw1/bin/mypy --config-file scripts/mypy-qwenpaw.ini >.venv-qwenpaw1/mypy.log 2>&1 &
qwenpaw_types=$!
.venv-qwenpaw2/bin/mypy --config-file scripts/mypy-qwenpaw2.ini >.venv-qwenpaw2/mypy.log 2>&1 &
qwenpaw2_types=$!
heartbeat "   mypy (the package)" "" .venv/bin/mypy
heartbeat "   mypy (benchmarks)" "" .venv/bin/mypy --strict benchmarks
heartbeat "   mypy (the 1.x adapter)" "" .venv-as1/bin/mypy --config-file scripts/mypy-agentscope1.ini
echo "   mypy (the QwenPaw host, run alongside):"
if ! wait "$qwenpaw_types"; then
  cat .venv-qwenpaw1/mypy.log
  exit 1
fi
cat .venv-qwenpaw1/mypy.log
echo "   mypy (the QwenPaw 2.2 host, run alongside):"
if ! wait "$qwenpaw2_types"; then
  cat .venv-qwenpaw2/mypy.log
  exit 1
fi
cat .venv-qwenpaw2/mypy.log
step "schema: configs/ matches the config models"
.venv/bin/python scripts/gen_schema.py --check

# The 1.x and QwenPaw runs go alongside the 2.x one (all mostly wait on files and event
# loops). Their output streams as it runs, each line prefixed "[1.x] ", "[qwenpaw] " or
# "[qwenpaw2] " (and kept in its log); the 2.x run's progress prints unprefixed.
as1_log=.venv-as1/pytest.log
qwenpaw_log=.venv-qwenpaw1/pytest.log
qwenpaw2_log=.venv-qwenpaw2/pytest.log
step "pytest: AgentScope 1.x, QwenPaw 1.1 and 2.2 alongside (lines prefixed [1.x], [qwenpaw], [qwenpaw2]; logs: $as1_log, $qwenpaw_log, $qwenpaw2_log), AgentScope 2.x here"
AGENTSCOPE_DISABLE_CONSOLE_OUTPUT=true prefixed "[1.x] " "$as1_log" \
  .venv-as1/bin/python -u -m pytest -q -p no:cacheprovider --basetemp=.venv-as1/pytest-tmp \
  tests & as1_tests=$!
AGENTSCOPE_DISABLE_CONSOLE_OUTPUT=true prefixed "[qwenpaw] " "$qwenpaw_log" \
  .venv-qwenpaw1/bin/python -u -m pytest -q -p no:cacheprovider \
  --basetemp=.venv-qwenpaw1/pytest-tmp tests/qwenpaw & qwenpaw_tests=$!
AGENTSCOPE_DISABLE_CONSOLE_OUTPUT=true prefixed "[qwenpaw2] " "$qwenpaw2_log" \
  .venv-qwenpaw2/bin/python -u -m pytest -q -p no:cacheprovider \
  --basetemp=.venv-qwenpaw2/pytest-tmp tests/qwenpaw2 & qwenpaw2_tests=$!
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider "$@" || status=$?
as1_status=0
wait "$as1_tests" || as1_status=$?
qwenpaw_status=0
wait "$qwenpaw_tests" || qwenpaw_status=$?
qwenpaw2_status=0
wait "$qwenpaw2_tests" || qwenpaw2_status=$?
oldest_status=0
step "pytest: the oldest supported releases: AgentScope 2.0.10 (tests/agentscope2), 1.0.20 (tests/agentscope1, invariants, ported); about 2 minutes"
.venv-as2.0.10/bin/python -m pytest -q -p no:cacheprovider --basetemp=.venv-as2.0.10/pytest-tmp \
  tests/agentscope2 || oldest_status=$?
AGENTSCOPE_DISABLE_CONSOLE_OUTPUT=true .venv-as1.0.20/bin/python -m pytest -q -p no:cacheprovider \
  --basetemp=.venv-as1.0.20/pytest-tmp tests/agentscope1 tests/invariants tests/ported \
  || oldest_status=$?
verdict() { [ "$1" -eq 0 ] && echo passed || echo FAILED; }
echo "== done in $SECONDS s: AgentScope 2.x $(verdict "$status"), AgentScope 1.x $(verdict "$as1_status"), QwenPaw 1.1 $(verdict "$qwenpaw_status"), QwenPaw 2.2 $(verdict "$qwenpaw2_status"), oldest releases (2.0.10, 1.0.20) $(verdict "$oldest_status") =="
for result in "$status" "$as1_status" "$qwenpaw_status" "$qwenpaw2_status" "$oldest_status"; do
  if [ "$result" -ne 0 ]; then
    exit "$result"
  fi
done
