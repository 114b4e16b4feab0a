"""The shared archive's day files, copied into this replica's own dialog folder.

With a PostgreSQL store the archive lives in the database, one stream per day
(``dialog/YYYY-MM-DD.jsonl``); :class:`ArchiveMirror` keeps each replica's ``dialog/`` files
a copy of it (:mod:`copaw_context.core.store.copies`), appended as the file archive appends:
under the day file's lock, with one write and ``fsync``, a torn last line cut.
"""

from __future__ import annotations

import contextlib
import os

from copaw_context.core.archive.lines import append_lines, open_archive_dir, open_day
from copaw_context.core.archive.store import ARCHIVE_FILE
from copaw_context.core.store.copies import MIRROR_DIR, StoreOpener, StreamCopies
from copaw_context.core.store.protocol import StreamEntry
from copaw_context.core.workspace.fd_lock import lock_at

__all__ = ["MIRROR_DIR", "ArchiveMirror", "StoreOpener"]


class ArchiveMirror(StreamCopies):
    """Copies the store's archive streams into the local dialog folder."""

    what = "dialog archive"
    names = ARCHIVE_FILE

    def _copy(self, stream: str, entries: list[StreamEntry]) -> None:
        path = self.path(stream)
        with contextlib.ExitStack() as held:
            dir_fd = held.enter_context(open_archive_dir(self.directory, self.workspace))
            lock = path.with_name(path.name + ".lock")
            held.enter_context(lock_at(dir_fd, lock, self.workspace, self.lock_timeout))
            fd = open_day(dir_fd, path, self.workspace)
            held.callback(os.close, fd)
            fresh = self.fresh(stream, entries, fd)
            if fresh:
                append_lines(path, [entry.data + b"\n" for entry in fresh], fd)
            self.copied(stream, entries, fd)
