"""MEMORY.md and the daily logs in the workspace store (issue 20), on a real PostgreSQL: two
replicas (their own folders, one agent id) editing MEMORY.md at once lose no update; a hand
edit of one replica's copy reaches the other; edited on both sides, the store's text wins and
the local text is kept as a backup; daily log entries of every replica reach every copy with
one heading; consolidation runs on one replica at a time over every replica's logs, the record
of what was folded shared; a store that is down refuses a change (nothing half-written) and
leaves the reads on the local copy."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory import MemoryConsolidator, MemoryFileError
from copaw_context.core.memory.service import MemoryService
from tests.pg_server import pg_dsn
from tests.store_replicas import memory_replica, store_config, stored_document

__all__ = ["pg_dsn"]

_NOON = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def agent_id() -> str:
    return f"agent-{uuid.uuid4().hex}"


async def test_edits_on_two_replicas_at_once_lose_nothing(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    a = memory_replica(config, tmp_path / "a", agent_id)
    b = memory_replica(config, tmp_path / "b", agent_id)
    edits = [
        replica.tools.memory_edit("Preferences", f"- item {name}{i}")
        for i in range(8)
        for name, replica in (("a", a), ("b", b))
    ]
    answers = await asyncio.gather(*edits)
    assert [a for a in answers if not a.startswith("Added to")] == []
    shared = (await stored_document(pg_dsn, agent_id, "MEMORY.md") or b"").decode()
    for name in "ab":
        for i in range(8):
            assert f"- item {name}{i}" in shared
    texts = [await s.tools.files.read_memory() for s in (a, b)]
    assert texts[0] == texts[1] == shared


async def test_a_hand_edit_reaches_the_other_replica_and_a_clash_keeps_both(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    a = memory_replica(config, tmp_path / "a", agent_id)
    b = memory_replica(config, tmp_path / "b", agent_id)
    await a.tools.memory_edit("Facts", "- the build uses make")
    assert "the build uses make" in await b.tools.files.read_memory()

    path_b = b.tools.files.memory_path()
    path_b.write_text(path_b.read_text(encoding="utf-8") + "- edited by hand on b\n", "utf-8")
    assert "edited by hand on b" in await b.tools.files.read_memory()  # B's next sync puts it
    assert "edited by hand on b" in await a.tools.files.read_memory()

    # Both sides change before the next sync: the store's text wins, B's is kept as a backup.
    await a.tools.memory_edit("Facts", "- from a again")
    path_b.write_text(path_b.read_text(encoding="utf-8") + "- second hand edit\n", "utf-8")
    text_b = await b.tools.files.read_memory()
    assert "from a again" in text_b and "second hand edit" not in text_b
    backups = list(b.tools.files.backups_dir.glob("MEMORY.*.md"))
    assert any("second hand edit" in p.read_text(encoding="utf-8") for p in backups)


async def test_log_entries_of_every_replica_reach_every_copy(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    a = memory_replica(config, tmp_path / "a", agent_id)
    b = memory_replica(config, tmp_path / "b", agent_id)
    writes = [
        replica.tools.files.append_log(f"- note {name}{i}", source="agent", when=_NOON)
        for i in range(5)
        for name, replica in (("a", a), ("b", b))
    ]
    await asyncio.gather(*writes)
    texts = [await s.tools.files.read_log(_NOON.date()) for s in (a, b)]
    assert texts[0] == texts[1]
    assert texts[0].startswith("# 2026-05-01\n\n") and texts[0].count("# 2026-05-01") == 1
    assert sorted(line[-2:] for line in texts[0].splitlines() if "note" in line) == sorted(
        f"{n}{i}" for n in "ab" for i in range(5)
    )


async def test_consolidation_runs_once_over_every_replicas_logs(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    a = memory_replica(config, tmp_path / "a", agent_id)
    b = memory_replica(config, tmp_path / "b", agent_id)
    today = datetime.now().astimezone()
    await a.tools.files.append_log("- Lesson: run make clean before the parser build", when=today)
    await b.tools.files.append_log("- Lesson: the CI cache key includes the lockfile", when=today)
    runs = []
    for service in (a, b):
        consolidator = MemoryConsolidator(service.tools.files)
        runs.append(consolidator.consolidate())
    first, second = await asyncio.gather(*runs)
    assert sorted([first.written, second.written]) == [False, True]  # one folded, one found none
    text = await a.tools.files.read_memory()
    assert text.count("run make clean") == 1 and text.count("cache key includes") == 1
    record = await stored_document(pg_dsn, agent_id, "memory/.consolidated.json")
    assert record is not None and today.date().isoformat() in json.loads(record)["logs"]


async def test_a_store_that_is_down_refuses_a_change_and_reads_the_local_copy(
    tmp_path: Path, agent_id: str
) -> None:
    ws = tmp_path / "ws"
    service = memory_replica(store_config("postgresql://nobody@127.0.0.1:1/none"), ws, agent_id)
    (ws / "MEMORY.md").write_text("## Facts\n- kept locally\n", encoding="utf-8")
    answer = await service.tools.memory_edit("Facts", "- new")
    assert answer.startswith("Error:") and "workspace store is unavailable" in answer
    assert (ws / "MEMORY.md").read_text(encoding="utf-8") == "## Facts\n- kept locally\n"
    assert "kept locally" in await service.tools.files.read_memory()
    with pytest.raises(MemoryFileError, match="workspace store is unavailable"):
        await service.tools.files.append_log("- a note")


async def test_a_summary_cleared_on_one_replica_is_found_on_another(
    pg_dsn: str, tmp_path: Path, agent_id: str
) -> None:
    config = store_config(pg_dsn)
    a = memory_replica(config, tmp_path / "a", agent_id)
    b = memory_replica(config, tmp_path / "b", agent_id)
    summary = "## Goal\n- Ship the zebrafish importer\n\n## Constraints & Preferences\n- none"
    record = CompactionRecord("clear", "s1", "bot", (), summary)
    kept = a.on_compaction(record)
    assert kept is not None
    await kept
    await b.copy_shared()
    (day,) = (tmp_path / "b" / "dialog" / "summaries").glob("*.md")
    assert day.read_bytes() == (tmp_path / "a" / "dialog" / "summaries" / day.name).read_bytes()
    assert day.read_text(encoding="utf-8").startswith("# /clear · ")
    hits = await b.tools.index.search("zebrafish importer")
    assert [h.kind for h in hits] == ["summary"]
    await a.close()
    await b.close()


def test_without_a_store_the_memory_is_the_files(tmp_path: Path) -> None:
    assert MemoryService(RunningConfig(), tmp_path).shared is None
