#!/usr/bin/env bash
# The benchmarks (not part of the test suite): truncation, offload write, stage 1, the
# engine's per-step cost, split planning, one compaction and prompt-cache reuse; the chain of
# compactions (docs/quality.md) only with --only chain, the workspace store against a
# PostgreSQL it starts (docs/performance.md) only with --only store. Bootstraps .venv.
#   bash scripts/bench.sh            # default run, about 8 minutes on 2 cores
#   bash scripts/bench.sh --quick    # a short run
#   bash scripts/bench.sh --only cut stage1      # parts: cut save stage1 steps split compaction profile cache recall chain store
# Results: benchmarks/results/ (latest.md, results.json, steps.png, profile-step.txt), the
# committed figures behind docs/performance.md. A partial run (--quick or --only) writes to
# .venv/bench-partial/ instead, so it never replaces them (--out DIR chooses another folder).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
out=()
case " $* " in
  *" --out "* | *" --out="*) ;;
  *" --quick "* | *" --only "*) out=(--out .venv/bench-partial) ;;
esac
exec .venv/bin/python -m benchmarks "$@" "${out[@]}"
