"""``SharedArchive``: a session's dialog archive in the workspace store (issue 20, step 6).

With a PostgreSQL store the archive step appends here instead of to the local files: the
same lines :class:`~.store.DialogArchive` writes (encoded by it), one stream per day
(``dialog/YYYY-MM-DD.jsonl``), exactly once by ``session_id`` and ``archive_id`` across every
replica of the agent. The parts a session already archived are left out as the file archive
leaves them out, judged on the local copy (:mod:`.mirror`) brought up to date first. A store
that is down is an :class:`~copaw_context.core.errors.ArchiveError` like a full disk: the
archive step keeps the messages in the session state and writes them later.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from copaw_context.core.archive.lines import ArchiveLine
from copaw_context.core.archive.mirror import ArchiveMirror
from copaw_context.core.archive.reader import cached_line_count
from copaw_context.core.archive.store import ArchivedFile, DialogArchive
from copaw_context.core.errors import ArchiveError
from copaw_context.core.store.lines import record_key
from copaw_context.core.store.protocol import StreamRecord

__all__ = ["SharedArchive"]

_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)


class SharedArchive:
    """A session's archive in the workspace store, with the local copy kept up to date."""

    def __init__(self, local: DialogArchive, mirror: ArchiveMirror) -> None:
        self.local = local
        self.mirror = mirror

    @property
    def directory(self) -> Path:
        """The local folder of the day files (the copy of the store's streams)."""
        return self.local.directory

    async def append(
        self,
        messages: Sequence[Mapping[str, Any]],
        timestamps: Sequence[str | None],
        archive_ids: Sequence[str] | None = None,
        *,
        forms: Sequence[str] | None = None,
        part_keys: Sequence[Sequence[str]] | None = None,
    ) -> list[ArchivedFile]:
        """:meth:`DialogArchive.append`, into the store (durable there when this returns);
        the files returned are the local copies with their line counts."""
        batches = self.local.encode_batch(messages, timestamps, archive_ids, forms, part_keys)
        if not batches:
            return []
        streams = {day: self._stream(day) for day in batches}
        if not await self.mirror.refresh(list(streams.values())):
            raise ArchiveError(
                "the workspace store is unavailable or the local copy of the archive cannot "
                "be brought up to date (see the warning logged before); nothing was written"
            )
        store = await self.mirror.opener.store()
        if store is None:
            raise ArchiveError("the workspace store is unavailable; nothing was written")
        lines = await asyncio.to_thread(self._fresh_lines, batches)
        records = [
            StreamRecord(streams[day], record_key(line), line.rstrip(b"\n"))
            for day, day_lines in lines.items()
            for line in day_lines
        ]
        try:
            await store.append(records)
        except Exception as error:
            raise ArchiveError(
                f"cannot append to the workspace store: {error}; nothing was written"
            ) from error
        await self.mirror.refresh(list(streams.values()))  # best effort: the store has them
        return await asyncio.to_thread(self._counted, [day for day in sorted(lines) if lines[day]])

    def _stream(self, day: date) -> str:
        stream = self.mirror.stream(self.local.path_for(day))
        if stream is None:  # the archive's own day file: always a stream of the mirror
            raise ArchiveError(f"{self.local.path_for(day)} is not a day file of the archive")
        return stream

    def _fresh_lines(self, batches: dict[date, list[ArchiveLine]]) -> dict[date, list[bytes]]:
        """Per day, the lines the session has not archived yet (judged on the local copy)."""
        fresh: dict[date, list[bytes]] = {}
        for day in sorted(batches):
            path = self.local.path_for(day)
            try:
                fd: int | None = os.open(path, _READ_FLAGS)  # a fifo never blocks
            except FileNotFoundError:
                fd = None
            except OSError as error:
                raise ArchiveError(f"cannot read {path}: {error}; nothing was written") from error
            try:
                if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise ArchiveError(
                        f"{path} is not a regular file; remove it so that the archive can "
                        "copy its day; nothing was written"
                    )
                fresh[day] = self.local.not_yet_archived(path, batches[day], fd)
            finally:
                if fd is not None:
                    os.close(fd)
        return fresh

    def _counted(self, days: list[date]) -> list[ArchivedFile]:
        found = []
        for day in days:
            path = self.local.path_for(day)
            try:
                found.append(ArchivedFile(path, cached_line_count(path)))
            except OSError:  # the copy failed; the lines are in the store
                continue
        return found

    async def list_files(self) -> list[ArchivedFile]:
        """The local day files, after copying what other replicas archived."""
        await self.mirror.refresh()
        return await self.local.list_files()

    def day_files(self, timestamps: Sequence[str | None]) -> list[Path]:
        """:meth:`DialogArchive.day_files`."""
        return self.local.day_files(timestamps)
