"""Local copies of a shared store's streams: each replica's own files, a cache of the database.

With a PostgreSQL store the dialog archive and the daily logs live in the database, shared by
every replica of the agent (its agent id). Each replica copies the streams' records into its
own files, in the database's order, so that what reads them as files (the recall index,
``read_file``, the consolidation, the summary's guide) sees every replica's lines. The copy
is never the only copy of a line.

``<folder>/.mirror/<name>.json`` remembers, per workspace, how many of the stream's records
the file holds and the file's size after them. Lines the file held before the first copy (a
workspace that wrote its files before the store was configured) stay where they are; a copy
that a kill cut short is recognised by its lines and finished, never written twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Protocol, Self

from copaw_context.core.store.lines import check_key
from copaw_context.core.store.protocol import StoreError, StreamEntry, WorkspaceStore
from copaw_context.core.workspace.confine import OutsideWorkspaceError, read_bytes_inside
from copaw_context.core.workspace.locked_io import atomic_write

__all__ = ["MIRROR_DIR", "StoreOpener", "StreamCopies", "already_there"]

logger = logging.getLogger("copaw_context")

MIRROR_DIR = ".mirror"
"""The folder (inside the copied files' folder) of the copies' positions."""

_COPIED: dict[tuple[str, str, str], int] = {}
"""(folder, workspace id, stream) -> the records its file held at this process's last look."""


class StoreOpener(Protocol):
    """What opens the workspace store on first use (``toolresults.store_blobs.StoreBlobs``)."""

    @property
    def workspace_id(self) -> str: ...

    async def store(self) -> WorkspaceStore | None:
        """The open store, or ``None`` while it cannot be opened."""
        ...


class StreamCopies(ABC):
    """Copies the store's streams of one folder (names matching ``names``) into local files.

    A subclass writes the lines (:meth:`_copy`): the lock and the append of its kind of file.
    """

    what: ClassVar[str] = "streams"
    """What the copies hold, in the log's words."""
    names: ClassVar[re.Pattern[str]]
    """The names of the files (and streams) copied."""

    def __init__(
        self, opener: StoreOpener, directory: Path, workspace: Path, *, lock_timeout: float = 30.0
    ) -> None:
        self.opener = opener
        self.directory = directory
        self.workspace = workspace
        self.lock_timeout = lock_timeout
        self.folder = check_key(directory.relative_to(workspace).as_posix(), "folder")
        """The streams' folder in the store (workspace-relative)."""
        self._distrusted: set[str] = set()
        """Streams whose position file claims more records than the stream holds."""

    @classmethod
    def of(cls, opener: StoreOpener | None, directory: Path, workspace: Path) -> Self | None:
        """The copies of ``directory``; ``None`` without a store or for a folder outside the
        workspace (its files then stay the only copy)."""
        if opener is None:
            return None
        try:
            return cls(opener, directory, workspace)
        except (ValueError, StoreError):
            logger.warning(
                "copaw-context: %s is outside the workspace; its %s stay in the local files, "
                "not in the workspace store",
                directory,
                cls.what,
            )
            return None

    def stream(self, path: Path) -> str | None:
        """The stream of the local file ``path`` (``None`` for another file)."""
        if path.parent != self.directory or not self.names.fullmatch(path.name):
            return None
        return f"{self.folder}/{path.name}"

    def path(self, stream: str) -> Path:
        """The local file of ``stream``."""
        return self.directory / stream.rpartition("/")[2]

    async def refresh(self, streams: Sequence[str] | None = None) -> bool:
        """Copy the records of ``streams`` (default: every stream of the folder) the local
        files lack; ``False`` (logged) when the store could not be read: the files stay as
        they were, nothing of the database is lost."""
        store = await self.opener.store()
        if store is None:
            return False
        try:
            if streams is None:  # one query says which streams have records not copied
                lengths = await store.stream_lengths(f"{self.folder}/")
                streams = [
                    stream
                    for stream, count in sorted(lengths.items())
                    if self.stream(self.path(stream)) == stream
                    and count > await self._known(stream)
                ]
            for stream in streams:
                start = await self._known(stream)
                # One record before the hint too: none there means the position lies.
                entries = await store.read(stream, max(0, start - 1))
                if start > 0 and (not entries or entries[0].seq != start - 1):
                    logger.warning(
                        "copaw-context: %s claims %d records of %s, the store holds fewer; "
                        "its lines are judged again",
                        self._position_file(stream),
                        start,
                        stream,
                    )
                    self._distrusted.add(stream)
                    _COPIED.pop((str(self.directory), self.opener.workspace_id, stream), None)
                    entries = await store.read(stream, 0)
                elif start > 0:
                    entries = entries[1:]
                if entries:
                    await asyncio.to_thread(self._copy, stream, entries)
        except Exception as error:  # the files are a cache; the next read tries again
            logger.warning("copaw-context: could not copy the shared %s: %s", self.what, error)
            return False
        return True

    async def _known(self, stream: str) -> int:
        """The records the local file held at the last look (this process's, else its
        position file's, read off the loop): a hint, the copy judges again under the lock."""
        key = (str(self.directory), self.opener.workspace_id, stream)
        known = _COPIED.get(key)
        if known is None:
            known = _COPIED[key] = (await asyncio.to_thread(self.position, stream))[0]
        return known

    @abstractmethod
    def _copy(self, stream: str, entries: list[StreamEntry]) -> None:
        """Append the records of ``entries`` the file lacks (blocking; its lock taken)."""

    def fresh(self, stream: str, entries: list[StreamEntry], fd: int) -> list[StreamEntry]:
        """The records of ``entries`` the file (open as ``fd``, its lock held) lacks."""
        copied, size = self.position(stream)
        if stream in self._distrusted:
            self._distrusted.discard(stream)
            copied, size = 0, None
        fresh = [entry for entry in entries if entry.seq >= copied]
        if fresh and fresh[0].seq != copied:
            logger.warning(
                "copaw-context: %s lacks records %d..%d of the store; copying from %d",
                self.path(stream),
                copied,
                fresh[0].seq - 1,
                fresh[0].seq,
            )
        end = os.fstat(fd).st_size
        # Never copied (``size`` None): a file holding exactly the first records already
        # (an export, an import's source) is not copied again; other lines stay before.
        start = 0 if size is None or size > end else size
        there = already_there(fd, start, end, fresh)
        if not there and fresh and end > start:  # a position lost or wrong: the file's end
            there = _at_the_end(os.pread(fd, end, 0), fresh)
        return fresh[there:]

    def copied(self, stream: str, entries: list[StreamEntry], fd: int) -> None:
        """Remember that the file (``fd``) holds ``entries`` now (those it had are not new);
        a position that cannot be saved is logged (the next copy judges the lines again)."""
        if entries and entries[-1].seq >= self.position(stream)[0]:
            try:
                self.save_position(stream, entries[-1].seq + 1, os.fstat(fd).st_size)
            except OSError as error:
                logger.warning(
                    "copaw-context: cannot save the position of %s's copy: %s", stream, error
                )
                _COPIED[(str(self.directory), self.opener.workspace_id, stream)] = (
                    entries[-1].seq + 1
                )

    # ------------------------------------------------------------------ positions
    def _position_file(self, stream: str) -> Path:
        return self.directory / MIRROR_DIR / f"{stream.rpartition('/')[2]}.json"

    def position(self, stream: str) -> tuple[int, int | None]:
        """(records copied, the file's size after them; ``None``: nothing copied yet)."""
        try:
            saved = json.loads(read_bytes_inside(self._position_file(stream), self.workspace))
            mine = saved.get(self.opener.workspace_id) if isinstance(saved, dict) else None
            if isinstance(mine, dict):
                copied, size = mine.get("copied"), mine.get("size")
                if isinstance(copied, int) and isinstance(size, int) and _count(copied, size):
                    return copied, size
        except (OSError, ValueError, OutsideWorkspaceError):
            pass
        return 0, None

    def save_position(self, stream: str, copied: int, size: int) -> None:
        """Remember that the file holds ``copied`` records, ending at byte ``size``."""
        target = self._position_file(stream)
        try:
            saved = json.loads(read_bytes_inside(target, self.workspace))
        except (OSError, ValueError, OutsideWorkspaceError):
            saved = {}
        if not isinstance(saved, dict):
            saved = {}
        saved[self.opener.workspace_id] = {"copied": copied, "size": size}
        atomic_write(target, json.dumps(saved, sort_keys=True).encode(), self.workspace)
        _COPIED[(str(self.directory), self.opener.workspace_id, stream)] = copied


def already_there(fd: int, size: int, end: int, fresh: list[StreamEntry]) -> int:
    """How many of ``fresh`` the file holds after byte ``size`` already (a copy a kill cut
    short before its position was saved). Lines there that are not these are left alone
    (then ``0``); a torn last line is the append's to mend."""
    if end <= size:
        return 0
    lines = os.pread(fd, end - size, size).split(b"\n")
    last = lines.pop()  # b"" after a final newline, else an unterminated line
    if last and len(lines) < len(fresh) and last == fresh[len(lines)].data:
        lines.append(last)  # whole but unterminated: the append terminates it
    for line, entry in zip(lines, fresh, strict=False):
        if line != entry.data:
            return 0
    return min(len(lines), len(fresh))


def _at_the_end(data: bytes, fresh: list[StreamEntry]) -> int:
    """How many of ``fresh`` end the file ``data`` (its last lines, an unterminated last one
    whole or torn): what a copy whose position was lost or wrong already wrote."""
    wanted = [entry.data for entry in fresh]
    lines = data.split(b"\n")
    last = lines.pop()
    if last:  # whole but unterminated: lines[-k:] are fresh[:k], then fresh[k]
        for k in range(min(len(wanted) - 1, len(lines)), -1, -1):
            if last == wanted[k] and lines[len(lines) - k :] == wanted[:k]:
                return k + 1
    for k in range(min(len(wanted), len(lines)), 0, -1):
        if lines[-1] == wanted[k - 1] and lines[len(lines) - k :] == wanted[:k]:
            return k
    return 0


def _count(*values: int) -> bool:
    """Whether a position file's figures are counts (non-negative, not bools)."""
    return all(not isinstance(value, bool) and value >= 0 for value in values)
