"""What the workspace-store tests share: a config naming the database, a replica's folder (an
agent.json holding the id replicas share), a replica's shared archive and its memory."""

from __future__ import annotations

import json
from pathlib import Path

from copaw_context.core.archive.mirror import ArchiveMirror
from copaw_context.core.archive.shared import SharedArchive
from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.memory.service import MemoryService
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import StreamEntry
from copaw_context.core.toolresults.store_blobs import StoreBlobs

__all__ = [
    "memory_replica",
    "replica",
    "shared_archive",
    "store_config",
    "stored_document",
    "stored_stream",
]


def store_config(dsn: str) -> RunningConfig:
    """The defaults, with the workspace store in the database ``dsn``."""
    return parse_running_config({"running": {"light_context_config": {"store": {"dsn": dsn}}}})


def replica(root: Path, agent_id: str) -> Path:
    """A replica's new folder as the deployment doc asks: an agent.json with the shared id."""
    root.mkdir(parents=True)
    (root / "agent.json").write_text(json.dumps({"id": agent_id}), encoding="utf-8")
    return root


def shared_archive(config: RunningConfig, workspace: Path, session: str = "s1") -> SharedArchive:
    """Session ``session``'s archive of ``workspace`` in the store (its copy in ``dialog/``)."""
    mirror = ArchiveMirror.of(StoreBlobs(config, workspace), workspace / "dialog", workspace)
    assert mirror is not None
    local = DialogArchive(
        workspace / "dialog", session_id=session, agent_name="bot", workspace=workspace
    )
    return SharedArchive(local, mirror)


def memory_replica(config: RunningConfig, root: Path, agent_id: str) -> MemoryService:
    """A new replica folder's memory, in the store."""
    service = MemoryService(config, replica(root, agent_id), store=StoreBlobs(config, root))
    assert service.shared is not None
    return service


async def stored_document(dsn: str, agent_id: str, key: str) -> bytes | None:
    """Document ``key`` of workspace ``agent_id`` as the database holds it (``None``: none)."""
    store = PostgresStore(dsn, agent_id)
    await store.open()
    try:
        return (await store.get_document(key)).data
    finally:
        await store.close()


async def stored_stream(dsn: str, agent_id: str, stream: str) -> list[StreamEntry]:
    """The records of ``stream`` of workspace ``agent_id`` as the database holds them."""
    store = PostgresStore(dsn, agent_id)
    await store.open()
    try:
        return await store.read(stream)
    finally:
        await store.close()
