"""Benchmarks for copaw-context (not tests: they print and save figures, assert nothing).

Run them with ``bash scripts/bench.sh`` (``--quick`` for a short run); see
``docs/performance.md`` for the method and the latest figures.
"""

__all__: list[str] = []
