"""Moving a workspace between its files and the PostgreSQL store (``copaw-context store``).

:func:`export_workspace` writes the workspace layout from the database, byte for byte as the
file store writes it: the archive's day files and the daily logs (each record a line), the
saved tool results and cut requests, MEMORY.md and the consolidation record.
:func:`import_workspace` moves them the other way: a stream the database already holds is
continued only when its records are the start of the file's lines; a blob or document it holds
must have the same bytes. Either plans everything first and writes nothing when something
clashes (the clashes are listed); each file or row written is whole.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from copaw_context.core.archive.store import ARCHIVE_FILE
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.errors import CopawContextError
from copaw_context.core.memory.files import DAILY_LOG, LEGACY_MEMORY_FILE, MEMORY_FILE
from copaw_context.core.store.lines import BLOB_NAME, check_key, record_key
from copaw_context.core.store.protocol import StreamRecord
from copaw_context.core.workspace.confine import read_bytes_inside
from copaw_context.core.workspace.locked_io import atomic_write

if TYPE_CHECKING:  # psycopg is an optional extra: imported by whoever opens the store
    from copaw_context.core.store.postgres import PostgresStore

__all__ = ["Layout", "TransferError", "TransferReport", "export_workspace", "import_workspace"]

_HEADING_LINES = 2  # a daily log's "# YYYY-MM-DD" and the blank line after it


class TransferError(CopawContextError):
    """The export or import would overwrite something different; nothing was written."""


@dataclass(frozen=True)
class Layout:
    """The workspace's folders (agent.json's ``dialog_path``, ``memory_dir``,
    ``tool_results_cache``) and what of them a store holds."""

    dialog: str = "dialog"
    memory: str = "memory"
    tool_results: str = "tool_result"

    @classmethod
    def from_config(cls, config: RunningConfig) -> Layout:
        light = config.light_context_config
        return cls(
            dialog=check_key(light.dialog_path.strip("/"), "dialog_path"),
            memory=check_key(config.memory.memory_dir.strip("/"), "memory_dir"),
            tool_results=check_key(
                light.tool_result_pruning_config.tool_results_cache.strip("/"),
                "tool_results_cache",
            ),
        )

    @property
    def streams(self) -> tuple[tuple[str, re.Pattern[str]], ...]:
        """(folder, file names) of the streams: the archive's days, the daily logs."""
        return ((self.dialog, ARCHIVE_FILE), (self.memory, DAILY_LOG))

    @property
    def blob_folders(self) -> tuple[str, ...]:
        """The folders of the blobs: saved tool results, cut requests and data blocks."""
        return (self.tool_results, f"{self.dialog}/requests")

    @property
    def documents(self) -> tuple[str, ...]:
        """The documents: MEMORY.md and the consolidation record."""
        return (MEMORY_FILE, f"{self.memory}/.consolidated.json")


@dataclass
class TransferReport:
    """What a transfer did: the keys written, and those already the same (left alone)."""

    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    nbytes: int = 0


async def export_workspace(
    store: PostgresStore, target: Path, layout: Layout, *, overwrite: bool = False
) -> TransferReport:
    """Write the workspace ``store`` holds into the folder ``target`` (see the module)."""
    planned: dict[str, bytes] = {}
    for folder, names in layout.streams:
        for stream in await store.streams(f"{folder}/"):
            if (
                names.fullmatch(stream.rpartition("/")[2])
                and stream.count("/") == folder.count("/") + 1
            ):
                planned[stream] = b"".join(e.data + b"\n" for e in await store.read(stream))
    for folder in layout.blob_folders:
        for info in await store.list_blobs(folder):
            planned[info.key] = (await store.read_lines(info.key)).data
    for key in layout.documents:
        doc = await store.get_document(key)
        if doc.data is not None:
            planned[key] = doc.data
    report = TransferReport()
    clashes = []
    for key, data in planned.items():
        current = await asyncio.to_thread(_read, target, key)
        if current == data:
            report.unchanged.append(key)
        elif current is not None and not overwrite:
            clashes.append(key)
    if clashes:
        raise TransferError(
            f"{len(clashes)} file(s) in {target} differ from the database: "
            f"{', '.join(sorted(clashes)[:10])}; nothing was written (--force overwrites them)"
        )
    for key, data in sorted(planned.items()):
        if key not in report.unchanged:
            await asyncio.to_thread(atomic_write, target / key, data, target)
            report.written.append(key)
            report.nbytes += len(data)
    return report


async def import_workspace(store: PostgresStore, source: Path, layout: Layout) -> TransferReport:
    """Put the workspace files of ``source`` into ``store`` (see the module)."""
    report = TransferReport()
    clashes: list[str] = []
    appends: list[StreamRecord] = []
    for folder, names in layout.streams:
        for path in _files(source / folder, names):
            stream = f"{folder}/{path.name}"
            log = folder == layout.memory
            data = await asyncio.to_thread(read_bytes_inside, path, source)
            lines = _lines(data, torn_cut=not log)
            held = [entry.data for entry in await store.read(stream)]
            if held != lines[: len(held)]:
                clashes.append(stream)
                continue
            fresh = lines[len(held) :]
            (report.written if fresh else report.unchanged).append(stream)
            appends += [
                StreamRecord(stream, _line_key(line, len(held) + i, log), line)
                for i, line in enumerate(fresh)
            ]
    blobs: list[tuple[str, bytes]] = []
    for folder in layout.blob_folders:
        for path in _files(source / folder, BLOB_NAME):
            key, data = (
                f"{folder}/{path.name}",
                await asyncio.to_thread(read_bytes_inside, path, source),
            )
            if await store.blob_info(key) is None:
                blobs.append((key, data))
            elif (await store.read_lines(key)).data == data:
                report.unchanged.append(key)
            else:
                clashes.append(key)
    documents: list[tuple[str, bytes]] = []
    for key in layout.documents:
        found = await asyncio.to_thread(_read, source, key)
        if found is None and key == MEMORY_FILE:
            found = await asyncio.to_thread(_read, source, LEGACY_MEMORY_FILE)
        if found is None:
            continue
        data = found
        doc = await store.get_document(key)
        if doc.data is None:
            documents.append((key, data))
        elif doc.data == data:
            report.unchanged.append(key)
        else:
            clashes.append(key)
    if clashes:
        raise TransferError(
            f"{len(clashes)} item(s) of {source} differ from what the database holds: "
            f"{', '.join(sorted(clashes)[:10])}; nothing was written"
        )
    if appends:
        await store.append(appends)
        report.nbytes += sum(len(r.data) + 1 for r in appends)
    for key, data in blobs:
        await store.restore_blob(key, data)
        report.written.append(key)
        report.nbytes += len(data)
    for key, data in documents:
        await store.put_document(key, data, "")
        report.written.append(key)
        report.nbytes += len(data)
    return report


def _files(folder: Path, names: re.Pattern[str]) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if names.fullmatch(p.name) and p.is_file())
    except FileNotFoundError:
        return []


def _read(root: Path, key: str) -> bytes | None:
    try:
        return read_bytes_inside(root / key, root)
    except FileNotFoundError:
        return None


def _lines(data: bytes, *, torn_cut: bool) -> list[bytes]:
    """A stream file's records: its lines (an unterminated last line is one too, unless
    ``torn_cut`` and it does not parse: an archive line a kill cut short, which the file
    archive cuts off too)."""
    lines = data.split(b"\n")
    last = lines[-1]
    if last == b"" or (torn_cut and not _parses(last)):
        lines.pop()
    return lines


def _parses(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _line_key(line: bytes, index: int, log: bool) -> str | None:
    """An archive line's key is the one it names; a log's heading lines have theirs (a
    replica appending later does not write the heading again)."""
    if log:
        return f"heading:{index}" if index < _HEADING_LINES else None
    return record_key(line)
