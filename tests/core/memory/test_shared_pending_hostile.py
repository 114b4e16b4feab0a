"""Hostile records in the shared pending summaries' stream (issue 20), on a real PostgreSQL:
an ``open/`` whose id is no summary name (a path climbing out), an open whose input is
missing, one whose input is no summary, a ``done`` with no open, and a huge input: a start
with an empty folder skips what is not a summary, runs the real ones once, writes nothing
outside its memory folder."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from pathlib import Path

import pytest

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.memory._pending import _record_to_json
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StreamRecord
from copaw_context.testing import ScriptedTextModel
from tests.memory_doubles import record
from tests.pg_server import pg_dsn
from tests.store_replicas import memory_replica, stored_stream

__all__ = ["pg_dsn"]

STREAM = "memory/.pending.jsonl"
GOOD = "20260101T000000-0123456789ab"
HUGE = "20260101T000001-0123456789ac"


def settings(dsn: str) -> RunningConfig:
    light = {"store": {"dsn": dsn}, "compactor_timeout_seconds": 3600}
    running = {"light_context_config": light, "memory": {"close_timeout_seconds": 0}}
    return parse_running_config({"running": running})


async def _hostile_stream(dsn: str, agent_id: str) -> None:
    store = PostgresStore(dsn, agent_id)
    await store.open()
    try:
        note = json.dumps({"id": "x"}).encode()
        names = {
            GOOD: _record_to_json(record("Always pin the base image digest.")),
            HUGE: _record_to_json(record("Huge: " + "word " * 400_000)),
            "20260101T000002-0123456789ad": None,  # open, its input never saved
            "20260101T000003-0123456789ae": b"{not json",
        }
        for name, data in names.items():
            if data is not None:
                key = f"memory/.pending/{name}.json"
                current = await store.get_document(key)
                await store.put_document(key, data, current.version)
        records = [StreamRecord(STREAM, f"open/{name}", note) for name in names]
        records += [
            StreamRecord(STREAM, "open/../../etc/passwd", note),
            StreamRecord(STREAM, "open/", note),
            StreamRecord(STREAM, None, b"no key at all"),
            StreamRecord(STREAM, "done/20991231T000000-ffffffffffff", b"{}"),
        ]
        await store.append(records)
    finally:
        await store.close()


async def test_a_start_runs_the_real_summaries_once_and_skips_the_hostile_records(
    pg_dsn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    await _hostile_stream(pg_dsn, agent_id)
    service = memory_replica(settings(pg_dsn), tmp_path / "b", agent_id)
    model = ScriptedTextModel(default=lambda request: "- Pin the base image digest")
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        service.bind_model(model)
        assert service.summariser is not None
        await asyncio.wait_for(service.summariser.drain(), 120)
    await service.close()
    assert "20260101T000002-0123456789ad is open" in caplog.text  # its input missing
    assert "20260101T000003-0123456789ae in the workspace store is not a readable" in caplog.text
    keys = [e.key or "" for e in await stored_stream(pg_dsn, agent_id, STREAM)]
    assert keys.count(f"done/{GOOD}") == 1 and keys.count(f"done/{HUGE}") == 1
    assert not any(
        k.startswith("done/") and "0123456789a" in k and k[5:] not in (GOOD, HUGE) for k in keys
    )
    assert len(model.calls) >= 2  # the two real ones ran (the huge one maybe in parts)
    assert not (tmp_path / "etc").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
