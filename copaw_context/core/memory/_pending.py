"""Memory summaries not finished yet, kept on disk until they are.

Each scheduled summary first saves its input (the :class:`CompactionRecord`) as
``<memory_dir>/.pending/<time>-<id>.json`` and removes the file once the summary is written.
A summary that ``close()`` stopped at its time limit, or that the process lost (a hang, a
crash, ``asyncio.run`` ending without ``close()``), leaves its file: the next start (the
summariser bound to a model again) runs it. Nothing is lost; a summary run twice adds no
entry twice (entries already in the log are skipped).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from pathlib import Path
from typing import Any

from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory._io import atomic_write
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.core.workspace.confine import check_inside

__all__ = ["PENDING_DIR", "PendingSummaries"]

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


class PendingSummaries:
    """The saved inputs of one workspace's unfinished memory summaries."""

    def __init__(self, memory_dir: Path, workspace: Path) -> None:
        self.folder = memory_dir / PENDING_DIR
        self._workspace = workspace

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

    async def remove(self, path: Path) -> None:
        """The summary of ``path`` is done: forget it."""
        try:
            await asyncio.to_thread(path.unlink, missing_ok=True)
        except OSError as error:
            logger.warning("memory summariser: could not remove %s: %s", path, error)

    async def load(self) -> list[tuple[Path, CompactionRecord]]:
        """The saved summaries, oldest first (a file that cannot be read is logged, kept and
        left out)."""
        return await asyncio.to_thread(self._load)

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
