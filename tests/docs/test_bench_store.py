"""The store benchmark (``benchmarks/store.py``) on a small scale against the test session's
real PostgreSQL: every figure is measured on both stores (never a constant), a replica's
copies of the archive are the files byte for byte, the sizing counts the database's rows; and
docs/performance.md shows the committed figures."""

from __future__ import annotations

import asyncio
from pathlib import Path

from benchmarks.store import _archive_rows, _blob_rows, _recall_rows, _step_rows, store_table
from tests.docs.readme_blocks import ROOT
from tests.pg_server import pg_dsn

__all__ = ["pg_dsn"]


def test_every_operation_is_measured_on_both_stores(pg_dsn: str, tmp_path: Path) -> None:
    rows = [asyncio.run(_archive_rows(tmp_path, pg_dsn, 3))]
    rows += asyncio.run(_blob_rows(tmp_path, pg_dsn, 3))
    recall, imported = asyncio.run(_recall_rows(tmp_path, pg_dsn, 3000))
    rows += recall
    step, sizing = asyncio.run(_step_rows(tmp_path, pg_dsn, 3))
    rows.append(step)
    assert [r.operation.split(" ")[0] for r in rows] == [
        "archive",
        "blob",
        "line-range",
        "memory_search",
        "first",
        "per",
    ]
    assert all(r.files_ms > 0 and r.postgres_ms > 0 for r in rows)
    assert "archived messages" in rows[3].operation
    assert imported > 0
    # Six steps (three warm-up) archived: rows and results scaled to 1,000 steps.
    assert sizing["archive_rows"] == 1000 and sizing["archive_mb"] > 0 and sizing["blobs"] >= 0
    table = store_table({"rows": rows, "import_s": imported, "sizing": sizing})
    assert len([line for line in table if line.startswith("| ")]) == 1 + len(rows)


def test_docs_performance_shows_the_committed_store_figures() -> None:
    committed = (ROOT / "benchmarks" / "results" / "store.md").read_text(encoding="utf-8")
    performance = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    rows = [line for line in committed.splitlines() if line.startswith("| ") and "ms" not in line]
    assert rows and all(row in performance for row in rows)
    sizing = next(line for line in committed.splitlines() if line.startswith("Per 1,000 steps"))
    assert sizing in performance
