"""Memory summaries not finished yet, kept on disk until they are.

Each scheduled summary first saves its input (the :class:`CompactionRecord`) as
``<memory_dir>/.pending/<time>-<id>.json`` and removes the file once the summary is written.
A summary that ``close()`` stopped at its time limit, or that the process lost (a hang, a
crash, ``asyncio.run`` ending without ``close()``), leaves its file: the next start (the
summariser bound to a model again) runs it. Nothing is lost; a summary run twice adds no
entry twice (entries already in the log are skipped).

With a shared workspace store (a PostgreSQL DSN: :meth:`PendingSummaries.share`) the input
is kept in the store too (:mod:`._pending_shared`), so the next start of *any* replica of
the agent runs it, even when this replica's folder is gone; the local file stays as it is
(and keeps the summary when the store is down). Without one, only the local files.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory._io import atomic_write
from copaw_context.core.memory._pending_shared import Claim, SharedPending
from copaw_context.core.store.copies import StoreOpener
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.core.workspace.confine import check_inside

__all__ = ["PENDING_DIR", "Kept", "PendingSummaries"]

logger = logging.getLogger("copaw_context")

PENDING_DIR = ".pending"
_FORM = "copaw-context/pending-memory-summary/1"


def _record_to_json(record: CompactionRecord) -> bytes:
    messages = [
        {
            "role": m.role,
            "name": m.name,
            "timestamp": m.timestamp,
            "parts": [
                {
                    "kind": p.kind,
                    "text": p.text,
                    "tool_name": p.tool_name,
                    "tool_call_id": p.tool_call_id,
                    "is_error": p.is_error,
                }
                for p in m.parts
            ],
        }
        for m in record.messages
    ]
    data = {
        "form": _FORM,
        "trigger": record.trigger,
        "session_id": record.session_id,
        "agent_name": record.agent_name,
        "summary": record.summary,
        "archive_files": list(record.archive_files),
        "messages": messages,
    }
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


def _record_from_json(raw: bytes) -> CompactionRecord:
    data: dict[str, Any] = json.loads(raw.decode("utf-8"))
    if data.get("form") != _FORM:
        raise ValueError(f"not a pending memory summary (form {data.get('form')!r})")
    messages = tuple(
        TranscriptMessage(
            m["role"],
            str(m["name"]),
            tuple(
                TranscriptPart(
                    p["kind"],
                    str(p["text"]),
                    p.get("tool_name"),
                    p.get("tool_call_id"),
                    bool(p.get("is_error", False)),
                )
                for p in m["parts"]
            ),
            str(m.get("timestamp", "")),
        )
        for m in data["messages"]
    )
    summary = data.get("summary")
    return CompactionRecord(
        str(data["trigger"]),
        str(data["session_id"]),
        str(data["agent_name"]),
        messages,
        summary if isinstance(summary, str) else None,
        tuple(str(f) for f in data.get("archive_files", ())),
    )


@dataclass(frozen=True, slots=True)
class Kept:
    """A summary an earlier process left unfinished: its name (``<time>-<id>``), its local
    file (``None``: only the shared store holds it), whether the store lists it, its input."""

    name: str
    path: Path | None
    in_store: bool
    record: CompactionRecord


class PendingSummaries:
    """The saved inputs of one workspace's unfinished memory summaries."""

    def __init__(self, memory_dir: Path, workspace: Path) -> None:
        self.folder = memory_dir / PENDING_DIR
        self._workspace = workspace
        self.shared: SharedPending | None = None
        """The copies in the shared workspace store (``None``: the local files only)."""

    def share(self, opener: StoreOpener) -> None:
        """Keep the inputs in the shared store of ``opener`` too (see the module)."""
        self.shared = SharedPending.of(opener, self.folder.parent, self._workspace)

    def new_path(self) -> Path:
        """A fresh file name for one summary's input (oldest first by name)."""
        return self.folder / f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}.json"

    async def save(self, record: CompactionRecord, path: Path) -> bool:
        """Save ``record`` as ``path``; False when it could not be written (logged: the
        summary still runs, it is only not kept past this process)."""
        try:
            await asyncio.to_thread(atomic_write, path, _record_to_json(record), self._workspace)
        except Exception as error:
            logger.warning("memory summariser: could not keep the summary's input: %s", error)
            return False
        return True

    async def publish(self, name: str, record: CompactionRecord) -> bool:
        """Keep ``record`` (summary ``name``) in the shared store; False without one or when
        it is down (logged)."""
        if self.shared is None:
            return False
        return await self.shared.open(name, await asyncio.to_thread(_record_to_json, record))

    @asynccontextmanager
    async def claim(self, name: str, *, fresh: bool) -> AsyncIterator[Claim]:
        """Whether this process runs summary ``name`` (its lease held for the block, with a
        shared store: :meth:`SharedPending.claim`; always ``"run"`` without one)."""
        if self.shared is None:
            yield "run"
            return
        async with self.shared.claim(name, fresh=fresh) as run:
            yield run

    async def remove(self, path: Path | None, name: str | None = None) -> None:
        """The summary of ``path`` (``name``) is done: forget it (and say so in the shared
        store)."""
        if path is not None:
            try:
                await asyncio.to_thread(path.unlink, missing_ok=True)
            except OSError as error:
                logger.warning("memory summariser: could not remove %s: %s", path, error)
        if self.shared is not None and name is not None:
            await self.shared.done(name)

    async def load(self) -> list[Kept]:
        """The saved summaries, oldest first (a file that cannot be read is logged, kept and
        left out): the local files, and with a shared store those it holds not done (a
        local file the store says is done, run by another replica, is removed)."""
        local = await asyncio.to_thread(self._load)
        shared = None if self.shared is None else await self.shared.unfinished()
        if shared is None:
            return [Kept(path.stem, path, False, record) for path, record in local]
        open_names = {name for name, _ in shared[0]}
        found: list[Kept] = []
        for path, record in local:
            if path.stem in shared[1]:
                logger.info("memory summariser: %s was run by another replica", path.name)
                await self.remove(path)
            else:
                found.append(Kept(path.stem, path, path.stem in open_names, record))
        mine = {kept.name for kept in found}
        for name, data in shared[0]:
            if name in mine:
                continue
            try:
                found.append(Kept(name, None, True, _record_from_json(data)))
            except (ValueError, KeyError, TypeError) as error:
                logger.warning(
                    "memory summariser: %s in the workspace store is not a readable pending "
                    "summary (%s); left as it is",
                    name,
                    error,
                )
        return sorted(found, key=lambda kept: kept.name)

    def _load(self) -> list[tuple[Path, CompactionRecord]]:
        try:
            check_inside(self.folder, self._workspace, write=True)
            names = sorted(p.name for p in self.folder.glob("*.json") if p.is_file())
        except (OSError, PermissionError) as error:
            if self.folder.exists():
                logger.warning("memory summariser: cannot read %s: %s", self.folder, error)
            return []
        found: list[tuple[Path, CompactionRecord]] = []
        for name in names:
            path = self.folder / name
            try:
                found.append((path, _record_from_json(path.read_bytes())))
            except (OSError, ValueError, KeyError, TypeError) as error:
                logger.warning(
                    "memory summariser: %s is not a readable pending summary (%s); left as it is",
                    path,
                    error,
                )
        return found
