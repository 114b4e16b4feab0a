"""Consolidation's record of what was folded: ``<memory_dir>/.consolidated.json``.

Per day it holds the bytes folded and a hash of their end, so each run folds only what was
written since. Without a shared store the record is a document of the workspace's file store
(``get_document``, then ``put_document`` with its version, without a lock of its own: the
consolidation's lease keeps every other run out), the same bytes as ever; with one, the
shared store's copy is pulled into the file before the run and pushed after it
(``SharedMemory.pull_document`` / ``push_document``). Private to :mod:`copaw_context.core.memory`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from copaw_context.core.memory.files import MemoryFiles
from copaw_context.core.memory.markdown import entry_items, log_entry_text, normalise_text
from copaw_context.core.store.protocol import VersionConflictError

__all__ = ["STATE_FILE", "FoldRecord", "Pending"]

logger = logging.getLogger("copaw_context")

STATE_FILE = ".consolidated.json"
_TAIL_BYTES = 64
_STATE_DAYS = 1000  # the newest days whose folding is remembered (logs that still exist)

Pending = dict[str, tuple[list[str], dict[str, Any]]]
"""Per recent day: (entries not folded yet, the day's new record)."""


def _tail(data: bytes) -> str:
    return hashlib.sha1(data[-_TAIL_BYTES:]).hexdigest()


def _log_entries(text: str) -> list[str]:
    return [
        log_entry_text(item)
        for item in entry_items(text)
        if not item[0].lstrip().startswith("#") and log_entry_text(item)
    ]


def _empty() -> dict[str, Any]:
    return {"version": 1, "logs": {}}


class FoldRecord:
    """The record of one workspace's consolidation (read and written in one run)."""

    def __init__(self, files: MemoryFiles, days: int) -> None:
        self._files = files
        self._days = days
        self._version: str | None = None

    @property
    def path(self) -> Path:
        """``<memory_dir>/.consolidated.json``."""
        return self._files.memory_dir / STATE_FILE

    async def load(self) -> dict[str, Any]:
        """The record (an empty one when there is none or it is unreadable: logged, the
        logs are folded again)."""
        try:
            doc = await self._files.stored.read(self.path)
        except OSError as error:
            self._version = None
            return self._unreadable(error)
        self._version = doc.version
        if doc.data is None:
            return _empty()
        try:
            data = json.loads(doc.data.decode("utf-8"))
        except (ValueError, RecursionError) as error:  # nested too deep for the decoder
            return self._unreadable(error)
        if not isinstance(data, dict) or not isinstance(data.get("logs"), dict):
            return _empty()
        return data

    def _unreadable(self, error: Exception) -> dict[str, Any]:
        logger.warning("memory: %s is unreadable (%s); folding logs again", self.path, error)
        return _empty()

    def pending(self, state: dict[str, Any]) -> Pending:
        """Per recent day, what was not folded yet (blocking: the logs are read)."""
        files = self._files
        today = files.now().date()
        recent = [(day, path) for day, path in files.daily_logs() if day <= today]
        pending: Pending = {}
        for day, path in recent[-self._days :]:
            data = files.stored.read_sync(path).data
            if data is None:
                continue
            key = day.isoformat()
            done = state["logs"].get(key)
            start = 0
            if isinstance(done, dict) and isinstance(done.get("bytes"), int):
                folded = done["bytes"]
                if 0 < folded <= len(data) and _tail(data[:folded]) == done.get("tail"):
                    start = folded
            new_text = data[start:].decode("utf-8", errors="replace")
            record = {"bytes": len(data), "tail": _tail(data), "at": files.now().isoformat()}
            if start == len(data):
                continue
            pending[key] = (_log_entries(normalise_text(new_text)), record)
        return pending

    def _render(self, state: dict[str, Any], pending: Pending) -> bytes:
        logs = dict(state.get("logs", {}))
        for day, (_, record) in pending.items():
            logs[day] = record
        existing = {day.isoformat() for day, _ in self._files.daily_logs()}
        kept = sorted(day for day in logs if day in existing)[-_STATE_DAYS:]
        logs = {day: logs[day] for day in kept}
        updated = {"version": 1, "last_run": self._files.now().isoformat(), "logs": logs}
        return (json.dumps(updated, indent=1, sort_keys=True) + "\n").encode()

    async def save(self, state: dict[str, Any], pending: Pending) -> None:
        """Write the record with ``pending`` folded in (``put_document``; the version read
        by :meth:`load`, or the one found when the file changed since: the lease held, only
        a hand edit or an unreadable record moves it, and this run's record replaces it)."""
        data = await asyncio.to_thread(self._render, state, pending)
        stored = self._files.stored
        try:
            doc = await stored.put(self.path, data, self._version or "", lock=False)
        except VersionConflictError as error:
            doc = await stored.put(self.path, data, error.current, lock=False)
        self._version = doc.version
