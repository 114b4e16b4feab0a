"""The offload manifests in the workspace store: what every replica's sessions still name.

With a PostgreSQL store the saved results of all replicas share one folder of blobs, and a
replica's TTL cleanup must keep what the sessions on other replicas still name. Each
session's manifest (the names its context references, :mod:`.offload_refs`) is therefore also
a document of the store, ``<folder>/.refs/<session id>.json`` (``{"names": [...], "at": t}``),
and the sessions that have one are listed once each, by key, in the stream
``<folder>/.refs/sessions.jsonl``. A cleanup keeps every name of a manifest younger than the
manifests' age limit, whichever replica wrote it; a manifest that cannot be read keeps
everything (the cleanup waits for the next run).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from copaw_context.core.store.lines import BLOB_NAME, check_key
from copaw_context.core.store.protocol import StreamRecord, VersionConflictError, WorkspaceStore
from copaw_context.core.toolresults.offload_refs import is_session_id

__all__ = ["live_shared_names", "put_manifest"]

_TRIES = 3


def _keys(folder: str, session_id: str) -> tuple[str, str]:
    """(the manifest's document, the sessions' stream) of ``folder``."""
    return check_key(f"{folder}/.refs/{session_id}.json"), check_key(
        f"{folder}/.refs/sessions.jsonl"
    )


async def put_manifest(
    store: WorkspaceStore, folder: str, session_id: str, names: Iterable[str], now: float
) -> None:
    """Put ``session_id``'s manifest (its names, written at ``now``) in the store; a
    ``ValueError`` for an id that is no manifest id (32 hex digits)."""
    if not is_session_id(session_id):
        raise ValueError(f"not a manifest id: {session_id!r}")
    document, sessions = _keys(folder, session_id)
    data = json.dumps({"names": sorted(names), "at": now}, sort_keys=True).encode()
    for attempt in range(_TRIES):
        current = await store.get_document(document)
        try:
            await store.put_document(document, data, current.version)
            break
        except VersionConflictError:  # one writer per session: only a race of its own
            if attempt == _TRIES - 1:
                raise
    line = json.dumps({"session": session_id}).encode()
    await store.append([StreamRecord(sessions, session_id, line)])


async def live_shared_names(
    store: WorkspaceStore, folder: str, now: float, max_age: float
) -> set[str]:
    """Every name a manifest of ``folder`` younger than ``max_age`` seconds holds."""
    _, sessions = _keys(folder, "x" * 32)
    names: set[str] = set()
    for entry in await store.read(sessions):
        if entry.key is None or not is_session_id(entry.key):  # never put for such a key
            continue
        doc = await store.get_document(_keys(folder, entry.key)[0])
        if doc.data is None:
            continue
        manifest = json.loads(doc.data)
        at = manifest.get("at") if isinstance(manifest, dict) else None
        if isinstance(at, int | float) and now - at <= max_age:
            listed = manifest.get("names")
            names.update(n for n in listed or () if isinstance(n, str) and BLOB_NAME.fullmatch(n))
    return names
