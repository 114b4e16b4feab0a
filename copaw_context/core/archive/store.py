"""Dialog archive: the full raw messages removed from the context by compaction.

One JSON object per line in ``<directory>/YYYY-MM-DD.jsonl``, dated by each message's own
local timestamp. Unlike the reference SaveDialog (no lock, no fsync, no session id, errors
only logged), every line names its session and agent, each file is appended under an
inter-process lock with one write plus ``fsync``, and any failure raises
:class:`~copaw_context.core.errors.ArchiveError` so the caller keeps the messages. A batch
is all-or-nothing across its files: the locks of all of them are held while it is
written, and a failure rolls back what this batch already wrote, so a retry of the same
messages never duplicates a line. Before any line is written, the saved outputs still being
synced in the background are on disk (:func:`copaw_context.core.workspace.durable.flush`):
an archived notice never names a file a power cut could lose.

This module makes the lines and chooses which are new (:meth:`DialogArchive.not_yet_archived`,
under the locks); one writer does the rest
(:func:`copaw_context.core.store.file_streams.append_files`). In a workspace the archive
reaches it through the workspace's file store (``FileStore.append``, :attr:`DialogArchive.files`:
the step context's, else one of its own), so without a DSN the archive step reaches storage
through the workspace store; without a workspace, or for a folder that is no key of it, the
archive calls the writer itself. Either way the same files, bytes, locks, errors and counts.
The listing (:meth:`DialogArchive.list_files`: the day files and their line counts, which the
summary message cites) goes the same way: ``FileStore.line_counts`` (the counts cached per
file), else read here. :func:`read_archive` (one file's records, for tools and tests; no step
reads the archive through it) reads the file it is given.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any

from copaw_context.core.archive.lines import (
    ArchivedFile,
    ArchiveLine,
    ArchivePartialWriteError,
    dump_line,
    without_parts,
)
from copaw_context.core.archive.reader import archived_keys, cached_line_count, read_archive
from copaw_context.core.errors import ArchiveError
from copaw_context.core.store.file_streams import FileBatch, StreamReadError, append_files
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.lines import folder_of
from copaw_context.core.store.protocol import StoreError, StreamRecord

__all__ = [
    "ArchivePartialWriteError",
    "ArchivedFile",
    "DialogArchive",
    "parse_timestamp",
    "read_archive",
]

logger = logging.getLogger("copaw_context")

ARCHIVE_FILE = re.compile(r"\d{4}-\d{2}-\d{2}\.jsonl")
_LONG_FRACTION = re.compile(r"(\.\d{6})\d+")
_ARCHIVE_ID = re.compile(r"[A-Za-z0-9._:#-]{1,200}")


def parse_timestamp(value: object, tz: tzinfo | None = None) -> datetime | None:
    """Parse a message timestamp leniently into an aware datetime in ``tz``.

    Accepts ISO 8601 with a space or ``T``, a ``Z`` or numeric offset, any number of
    fraction digits (or a comma), or epoch seconds as a number. A naive value is taken
    as local time in ``tz`` (default: the machine's zone). Returns ``None`` if unparseable.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, tz) if tz else datetime.fromtimestamp(value)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = value.strip().replace(",", ".")
    if text.endswith(("z", "Z")):
        text = text[:-1] + "+00:00"
    text = _LONG_FRACTION.sub(r"\1", text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=tz) if tz else parsed.astimezone()
    return parsed.astimezone(tz) if tz else parsed.astimezone()


class DialogArchive:
    """Appends compacted messages of one session to per-day JSONL files."""

    def __init__(
        self,
        directory: Path,
        *,
        session_id: str,
        agent_name: str,
        tz: tzinfo | None = None,
        lock_timeout: float = 30.0,
        workspace: Path | None = None,
        files: FileStore | None = None,
    ) -> None:
        for name, value in (("session_id", session_id), ("agent_name", agent_name)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"DialogArchive {name} must be a non-empty string, got {value!r}")
        if tz is not None and not isinstance(tz, tzinfo):
            raise TypeError(f"DialogArchive tz must be a datetime.tzinfo or None, got {tz!r}")
        self._directory = Path(directory).expanduser().absolute()
        self._session_id = session_id
        self._agent_name = agent_name
        self._tz = tz
        self._lock_timeout = lock_timeout
        self._workspace = workspace
        if files is None and workspace is not None:
            files = FileStore(workspace, lock_timeout=lock_timeout)
        self.files: FileStore | None = files
        """The workspace's file store (``files=``, its lock timeout then applies; else one over
        ``workspace``; ``None`` without a workspace): the day files are appended through it
        (:meth:`_folder`)."""

    @property
    def directory(self) -> Path:
        """The absolute directory holding the ``YYYY-MM-DD.jsonl`` files."""
        return self._directory

    async def append(
        self,
        messages: Sequence[Mapping[str, Any]],
        timestamps: Sequence[str | None],
        archive_ids: Sequence[str] | None = None,
        *,
        forms: Sequence[str] | None = None,
        part_keys: Sequence[Sequence[str]] | None = None,
    ) -> list[ArchivedFile]:
        """Append ``messages`` (full JSON-able dicts) to the file of each one's local date.

        ``timestamps[i]`` is the timestamp of ``messages[i]``; a missing or unparseable one
        means now. ``archive_ids[i]``, when given, is a stable identity of ``messages[i]``:
        a message whose id this session already archived in its day file is skipped (a
        retry after a crash between the archive write and the context update must not
        archive it twice). ``forms[i]`` names how ``messages[i]`` is serialised (e.g.
        ``"agentscope2.Msg"``), so a reader knows how to load it. ``part_keys[i]`` are stable
        keys of the parts (blocks) of ``messages[i]``, in the order of its ``"content"`` list:
        parts this session already archived there are left out (a message that grew since a
        write that was not committed is archived without its known head). Returns the files
        written with their line counts after the append. Raises :class:`ArchiveError` on any
        failure; a batch that cannot be serialised writes nothing.
        """
        # Serialise on the caller's thread: a consistent snapshot, checked before any write.
        batches = self.encode_batch(messages, timestamps, archive_ids, forms, part_keys)
        if not batches:
            return []
        local = self._folder()
        if local is None:  # no workspace store: the same writer, called here
            return await asyncio.to_thread(self._write_batches, batches)
        files, folder = local
        days = {f"{folder}/{day.isoformat()}.jsonl": day for day in sorted(batches)}
        records = [
            StreamRecord(stream, self._key(line), line.data[:-1])
            for stream, day in days.items()
            for line in batches[day]
        ]

        def fresh(stream: str, fd: int) -> list[bytes]:
            day = days[stream]
            return self.not_yet_archived(self.path_for(day), batches[day], fd)

        try:
            result = await files.append(records, fresh=fresh)
        except StoreError as error:
            cause = error.__cause__
            if isinstance(cause, ArchiveError):  # the writer's own error and text, unwrapped
                raise cause from cause.__cause__
            raise ArchiveError(f"{error}; nothing was written") from error
        return [ArchivedFile(self.path_for(days[s]), lines) for s, lines in result.lengths]

    def _key(self, line: ArchiveLine) -> str | None:
        """The store key of ``line``: what it names (``record_key``), known without parsing."""
        return None if line.archive_id is None else f"{self._session_id}/{line.archive_id}"

    def _folder(self) -> tuple[FileStore, str] | None:
        """:attr:`files` and the key of the archive folder in it (``store/lines.py``
        :func:`~copaw_context.core.store.lines.folder_of`); ``None`` (the file code runs
        here) without a workspace, for a file store of another workspace, or a folder
        outside the workspace or not a key of plain names."""
        return folder_of(self.files, self._workspace, self._directory)

    async def list_files(self) -> list[ArchivedFile]:
        """Every ``YYYY-MM-DD.jsonl`` in the directory, oldest first, with its line count:
        through :attr:`files` (``FileStore.line_counts``, the counts cached per file) in a
        workspace, else read here; the same files, counts and errors either way, but that
        the store leaves a day file linked out of the workspace out (a warning)."""
        local = self._folder()
        if local is None:
            return await asyncio.to_thread(self._list_files_sync)
        files, folder = local
        try:
            counts = await files.line_counts(f"{folder}/", ARCHIVE_FILE)
        except StreamReadError as error:
            cause = error.__cause__
            if error.stream is None:
                raise ArchiveError(
                    f"cannot list archive directory {self._directory}: {cause}"
                ) from cause
            path = self._directory / error.stream.rpartition("/")[2]
            raise ArchiveError(f"cannot read archive file {path}: {cause}") from cause
        except StoreError as error:
            raise ArchiveError(
                f"cannot list archive directory {self._directory}: {error}"
            ) from error
        return [
            ArchivedFile(self._directory / key.rpartition("/")[2], n) for key, n in counts.items()
        ]

    def day_files(self, timestamps: Sequence[str | None]) -> list[Path]:
        """The files an :meth:`append` of messages with these ``timestamps`` writes to,
        oldest first (a missing or unparseable timestamp means now), without writing."""
        now = self._now()
        days = {(parse_timestamp(t, self._tz) or now).date() for t in timestamps}
        return [self.path_for(day) for day in sorted(days)]

    def _now(self) -> datetime:
        return datetime.now(self._tz) if self._tz else datetime.now().astimezone()

    def encode_batch(
        self,
        messages: Sequence[Mapping[str, Any]],
        timestamps: Sequence[str | None],
        archive_ids: Sequence[str] | None,
        forms: Sequence[str] | None = None,
        part_keys: Sequence[Sequence[str]] | None = None,
    ) -> dict[date, list[ArchiveLine]]:
        """The lines of an :meth:`append`, by day (the arguments are checked first)."""
        if len(messages) != len(timestamps):
            raise ValueError(
                f"append() got {len(messages)} messages but {len(timestamps)} timestamps; "
                "pass one timestamp (or None) per message"
            )
        if archive_ids is not None and len(archive_ids) != len(messages):
            raise ValueError(
                f"append() got {len(messages)} messages but {len(archive_ids)} archive ids; "
                "pass one id per message, or none"
            )
        for name, values in (("forms", forms), ("part_keys", part_keys)):
            if values is not None and len(values) != len(messages):
                raise ValueError(
                    f"append() got {len(messages)} messages but {len(values)} {name}; "
                    f"pass one per message, or none"
                )
        now = self._now()
        archived_at = now.isoformat()
        batches: dict[date, list[ArchiveLine]] = {}
        for index, (message, timestamp) in enumerate(zip(messages, timestamps, strict=True)):
            when = parse_timestamp(timestamp, self._tz)
            if when is None:
                if timestamp is not None:
                    logger.debug("archive: unparseable timestamp %r, using now", timestamp)
                when = now
            target = self.path_for(when.date())
            if not isinstance(message, Mapping):
                raise ArchiveError(
                    f"cannot archive message #{index} to {target}: expected a dict, "
                    f"got {type(message).__name__}; nothing was written"
                )
            archive_id = archive_ids[index] if archive_ids is not None else None
            if archive_id is not None and not _ARCHIVE_ID.fullmatch(archive_id):
                raise ValueError(
                    f"archive id {archive_id!r} of message #{index} is not allowed; use 1-200 "
                    "characters from letters, digits and ._:#-"
                )
            record: dict[str, Any] = {"session_id": self._session_id}
            parts = list(part_keys[index]) if part_keys is not None else None
            if archive_id is not None:
                record["archive_id"] = archive_id  # right after session_id: see archived_keys
                if parts is not None:
                    record["parts"] = parts
            if forms is not None:
                record["form"] = forms[index]
            record.update(
                {
                    "agent_name": self._agent_name,
                    "archived_at": archived_at,
                    "timestamp": timestamp,
                    "message": dict(message),
                }
            )
            try:
                line = dump_line(record)
            except (TypeError, ValueError, RecursionError) as error:
                raise ArchiveError(
                    f"cannot archive message #{index} to {target}: it is not JSON-serialisable "
                    f"({type(error).__name__}: {error}); nothing was written"
                ) from error
            batches.setdefault(when.date(), []).append(ArchiveLine(archive_id, parts, record, line))
        return batches

    def path_for(self, day: date) -> Path:
        return self._directory / f"{day.isoformat()}.jsonl"

    def _write_batches(self, batches: dict[date, list[ArchiveLine]]) -> list[ArchivedFile]:
        """The batches through the one writer (``store/file_streams.py`` ``append_files``),
        in date order."""
        files = [
            FileBatch(path, functools.partial(self.not_yet_archived, path, batches[day]))
            for day in sorted(batches)
            for path in [self.path_for(day)]
        ]
        return append_files(files, self._workspace, self._lock_timeout)

    def not_yet_archived(self, path: Path, batch: list[ArchiveLine], fd: int | None) -> list[bytes]:
        """The lines of ``batch`` this session has not written to ``path`` yet.

        A line whose archive id is known, or all of whose parts are, is skipped; a line with
        some known parts is written with the others only.
        """
        if all(item.archive_id is None for item in batch):
            return [item.data for item in batch]
        known_ids, known_parts = archived_keys(path, self._session_id, fd)
        fresh: list[bytes] = []
        for item in batch:
            if item.archive_id is not None and item.archive_id in known_ids:
                logger.info("archive: %s is already in %s, not written", item.archive_id, path)
                continue
            if not item.parts or not known_parts.intersection(item.parts):
                fresh.append(item.data)
                continue
            remaining = without_parts(item, known_parts)
            if remaining is not None:
                fresh.append(remaining)
        return fresh

    def _list_files_sync(self) -> list[ArchivedFile]:
        try:
            names = sorted(
                entry.name
                for entry in os.scandir(self._directory)
                if ARCHIVE_FILE.fullmatch(entry.name) and entry.is_file()
            )
        except FileNotFoundError:
            return []
        except OSError as error:
            raise ArchiveError(
                f"cannot list archive directory {self._directory}: {error}"
            ) from error
        files: list[ArchivedFile] = []
        for name in names:
            path = self._directory / name
            try:
                files.append(ArchivedFile(path, cached_line_count(path)))
            except FileNotFoundError:
                continue
            except OSError as error:
                raise ArchiveError(f"cannot read archive file {path}: {error}") from error
        return files
