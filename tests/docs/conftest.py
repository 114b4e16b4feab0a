"""``scripts/bench.sh`` runs the benchmarks in ``.venv`` (AgentScope 2.x): its test runs in the
2.x venv only (the 1.x run leaves it out, as tests/conftest.py does for the top-level tests)."""

from copaw_context import installed_agentscope_major

collect_ignore_glob = [] if installed_agentscope_major() >= 2 else ["test_bench_*.py"]
