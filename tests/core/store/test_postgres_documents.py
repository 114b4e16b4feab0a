"""Document puts attacked: versions the store never gave, and an insert whose reply is
lost (empty and binary data, another replica first)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StoreError, VersionConflictError, WorkspaceStore

_LOST = "the PostgreSQL store failed: consuming input failed: server closed the connection"


@pytest.mark.parametrize("version", ["٣", "²", "99999999999999999999", "-3", " 3", "3.0"])
async def test_a_version_the_store_never_gave_is_a_conflict(
    store: WorkspaceStore, version: str
) -> None:
    doc = await store.put_document("MEMORY.md", b"one", "")
    for _ in range(2):
        doc = await store.put_document("MEMORY.md", b"more", doc.version)
    assert doc.version != version
    with pytest.raises(VersionConflictError):
        await store.put_document("MEMORY.md", b"lost", version)
    assert (await store.get_document("MEMORY.md")).data == b"more"


async def _pair(dsn: str) -> tuple[PostgresStore, PostgresStore]:
    workspace_id = f"agent-{uuid.uuid4().hex}"
    one, two = (PostgresStore(dsn, workspace_id, max_connections=2) for _ in "12")
    await one.open()
    await two.open()
    return one, two


@pytest.mark.parametrize("data", [b"", b"\x00bin\x00\xff", "ünï\n".encode()])
async def test_an_insert_whose_reply_is_lost_is_read_back(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    one, two = await _pair(pg_dsn)
    fetch = one._fetch

    async def reply_lost(query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        if query.startswith("INSERT"):
            await fetch(query, params)
            raise StoreError(_LOST)
        return await fetch(query, params)

    try:
        monkeypatch.setattr(one, "_fetch", reply_lost)
        written = await one.put_document("state.json", data, "")
        seen = await two.get_document("state.json")
        assert (written.version, seen.data, seen.version) == ("1", data, "1")
        monkeypatch.undo()
        with pytest.raises(VersionConflictError):  # a second insert: the row is there
            await one.put_document("state.json", data, "")
    finally:
        for store in (one, two):
            await store.close()


async def test_an_insert_lost_after_another_replica_inserted_first_is_not_ours(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = await _pair(pg_dsn)
    fetch = one._fetch

    async def lost(query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        if query.startswith("INSERT"):
            raise StoreError(_LOST)
        return await fetch(query, params)

    try:
        await two.put_document("state.json", b"theirs", "")
        monkeypatch.setattr(one, "_fetch", lost)
        with pytest.raises(VersionConflictError) as raised:  # ours would have been version 1
            await one.put_document("state.json", b"ours", "")
        assert raised.value.current == "1"
        assert (await two.get_document("state.json")).data == b"theirs"
    finally:
        for store in (one, two):
            await store.close()


async def test_an_update_lost_is_unchanged_only_at_the_version_expected(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = await _pair(pg_dsn)
    fetch = one._fetch

    async def lost(query: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        if query.startswith("UPDATE"):
            raise StoreError(_LOST)
        return await fetch(query, params)

    try:
        first = await two.put_document("state.json", b"v1", "")
        monkeypatch.setattr(one, "_fetch", lost)
        with pytest.raises(StoreError, match="state.json is unchanged"):
            await one.put_document("state.json", b"ours", first.version)
        second = await two.put_document("state.json", b"v2", first.version)
        await two.put_document("state.json", b"v3", second.version)
        with pytest.raises(StoreError, match="whether this write landed before them is unknown"):
            await one.put_document("state.json", b"ours", first.version)
    finally:
        for store in (one, two):
            await store.close()


async def test_a_put_on_a_store_not_open_says_so() -> None:
    store = PostgresStore("postgresql://nobody@127.0.0.1:1/none", "agent-x")
    with pytest.raises(StoreError, match="not open: await store.open") as raised:
        await store.put_document("state.json", b"x", "")
    assert "unknown" not in str(raised.value)
