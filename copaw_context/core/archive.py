"""Dialog archive: the full raw messages removed from the context by compaction.

One JSON object per line in ``<directory>/YYYY-MM-DD.jsonl``, dated by each message's own
local timestamp. Unlike the reference SaveDialog (no lock, no fsync, no session id, errors
only logged), every line names its session and agent, each file is appended under an
inter-process lock with one write plus ``fsync``, and any failure raises
:class:`~copaw_context.core.errors.ArchiveError` so the caller keeps the messages. A batch
is all-or-nothing across its files: the locks of all of them are held while it is
written, and a failure rolls back what this batch already wrote, so a retry of the same
messages never duplicates a line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any, NoReturn

import filelock

from .archive_reader import archived_ids, cached_line_count, count_lines, read_archive
from .errors import ArchiveError

__all__ = [
    "ArchivePartialWriteError",
    "ArchivedFile",
    "DialogArchive",
    "parse_timestamp",
    "read_archive",
]

logger = logging.getLogger("copaw_context")

_ARCHIVE_FILE = re.compile(r"\d{4}-\d{2}-\d{2}\.jsonl")
_LONG_FRACTION = re.compile(r"(\.\d{6})\d+")
_COUNT_CHUNK_BYTES = 1 << 20
_ARCHIVE_ID = re.compile(r"[A-Za-z0-9._:#-]{1,200}")


@dataclass(frozen=True)
class ArchivedFile:
    """An archive file and its total number of lines."""

    path: Path
    lines: int


class ArchivePartialWriteError(ArchiveError):
    """A failed batch could not be rolled back everywhere.

    Raised only when undoing a failed append itself fails. ``written`` lists the files that
    may still hold lines of the batch (a retry of the same messages would duplicate them
    there); ``failed`` is the file whose write failed.
    """

    def __init__(self, message: str, written: Sequence[ArchivedFile], failed: Path) -> None:
        self.written = tuple(written)
        self.failed = failed
        super().__init__(message)


@dataclass(frozen=True)
class _Appended:
    path: Path
    size_before: int
    lines_after: int


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
    ) -> list[ArchivedFile]:
        """Append ``messages`` (full JSON-able dicts) to the file of each one's local date.

        ``timestamps[i]`` is the timestamp of ``messages[i]``; a missing or unparseable one
        means now. ``archive_ids[i]``, when given, is a stable identity of ``messages[i]``:
        a message whose id this session already archived in its day file is skipped (a
        retry after a crash between the archive write and the context update must not
        archive it twice). ``forms[i]`` names how ``messages[i]`` is serialised (e.g.
        ``"agentscope2.Msg"``), so a reader knows how to load it. Returns the files written
        with their line counts after the append. Raises :class:`ArchiveError` on any
        failure; a batch that cannot be serialised writes nothing.
        """
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
        if forms is not None and len(forms) != len(messages):
            raise ValueError(
                f"append() got {len(messages)} messages but {len(forms)} forms; "
                "pass one form per message, or none"
            )
        if not messages:
            return []
        # Serialise on the caller's thread: a consistent snapshot, checked before any write.
        batches = self._encode_batch(messages, timestamps, archive_ids, forms)
        return await asyncio.to_thread(self._write_batches, batches)

    async def list_files(self) -> list[ArchivedFile]:
        """Every ``YYYY-MM-DD.jsonl`` in the directory, oldest first, with its line count."""
        return await asyncio.to_thread(self._list_files_sync)

    def _now(self) -> datetime:
        return datetime.now(self._tz) if self._tz else datetime.now().astimezone()

    def _encode_batch(
        self,
        messages: Sequence[Mapping[str, Any]],
        timestamps: Sequence[str | None],
        archive_ids: Sequence[str] | None,
        forms: Sequence[str] | None = None,
    ) -> dict[date, list[tuple[str | None, bytes]]]:
        now = self._now()
        archived_at = now.isoformat()
        batches: dict[date, list[tuple[str | None, bytes]]] = {}
        for index, (message, timestamp) in enumerate(zip(messages, timestamps, strict=True)):
            when = parse_timestamp(timestamp, self._tz)
            if when is None:
                if timestamp is not None:
                    logger.debug("archive: unparseable timestamp %r, using now", timestamp)
                when = now
            target = self._path_for(when.date())
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
            if archive_id is not None:
                record["archive_id"] = archive_id  # right after session_id: see archived_ids
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
                line = _dump_line(record)
            except (TypeError, ValueError, RecursionError) as error:
                raise ArchiveError(
                    f"cannot archive message #{index} to {target}: it is not JSON-serialisable "
                    f"({type(error).__name__}: {error}); nothing was written"
                ) from error
            batches.setdefault(when.date(), []).append((archive_id, line))
        return batches

    def _path_for(self, day: date) -> Path:
        return self._directory / f"{day.isoformat()}.jsonl"

    def _write_batches(
        self, batches: dict[date, list[tuple[str | None, bytes]]]
    ) -> list[ArchivedFile]:
        try:
            self._directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ArchiveError(
                f"cannot create archive directory {self._directory}: {error}; nothing was written"
            ) from error
        days = sorted(batches)
        with contextlib.ExitStack() as locks:
            # All locks first, always in date order: no deadlock between writers, and no
            # other writer can append after our lines before a rollback removes them.
            for day in days:
                path = self._path_for(day)
                lock = filelock.FileLock(str(path) + ".lock", timeout=self._lock_timeout)
                try:
                    locks.enter_context(lock)
                except (OSError, filelock.Timeout) as error:
                    raise ArchiveError(
                        f"cannot append to archive file {path}: {self._cause(path, error)}; "
                        "nothing was written"
                    ) from error
            done: list[_Appended] = []
            for day in days:
                path = self._path_for(day)
                try:
                    lines = self._not_yet_archived(path, batches[day])
                    if lines:
                        done.append(_append(path, lines))
                except _AppendError as error:
                    self._undo(done, error)
                except OSError as error:  # reading the existing ids failed
                    self._undo(done, _AppendError(path, error, None))
                except BaseException:
                    for item in done:
                        _truncate(item.path, item.size_before)
                    raise
        return [ArchivedFile(item.path, item.lines_after) for item in done]

    def _not_yet_archived(self, path: Path, batch: list[tuple[str | None, bytes]]) -> list[bytes]:
        """The lines of ``batch`` whose archive id this session has not written to ``path``."""
        if all(archive_id is None for archive_id, _ in batch):
            return [line for _, line in batch]
        known = archived_ids(path, self._session_id)
        fresh: list[bytes] = []
        for archive_id, line in batch:
            if archive_id is not None and archive_id in known:
                logger.info("archive: %s is already in %s, not written again", archive_id, path)
                continue
            fresh.append(line)
        return fresh

    def _cause(self, path: Path, error: BaseException) -> str:
        if isinstance(error, filelock.Timeout):
            return (
                f"timed out after {self._lock_timeout:g} s waiting for {path}.lock "
                "(another process is writing it)"
            )
        return f"{type(error).__name__}: {error}"

    def _undo(self, done: list[_Appended], failure: _AppendError) -> NoReturn:
        """Roll back the files ``done`` already hold, then raise for ``failure``."""
        cause = self._cause(failure.path, failure.error)
        stuck = [
            ArchivedFile(item.path, item.lines_after)
            for item in done
            if not _truncate(item.path, item.size_before)
        ]
        if failure.left_lines is not None:
            stuck.append(ArchivedFile(failure.path, failure.left_lines))
        message = f"cannot append to archive file {failure.path}: {cause}"
        if not stuck:
            undone = f"; rolled back {len(done)} other file(s)" if done else ""
            raise ArchiveError(f"{message}; nothing was written{undone}") from failure.error
        names = ", ".join(str(item.path) for item in stuck)
        raise ArchivePartialWriteError(
            f"{message}; rolling back failed too, so these files may hold lines of this batch "
            f"and a retry would duplicate them there: {names}",
            stuck,
            failure.path,
        ) from failure.error

    def _list_files_sync(self) -> list[ArchivedFile]:
        try:
            names = sorted(
                entry.name
                for entry in os.scandir(self._directory)
                if _ARCHIVE_FILE.fullmatch(entry.name) and entry.is_file()
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


def _dump_line(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, ensure_ascii=False)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # Lone surrogates cannot be UTF-8; ASCII escapes keep them losslessly.
        return json.dumps(record, ensure_ascii=True).encode("ascii") + b"\n"


def _write_all(handle: Any, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = handle.write(view)
        if not written:
            raise OSError(f"write returned {written!r} with {len(view)} bytes left")
        view = view[written:]


class _AppendError(Exception):
    """Appending to ``path`` failed; ``left_lines`` is set if its own rollback failed too."""

    def __init__(self, path: Path, error: OSError, left_lines: int | None) -> None:
        super().__init__(str(error))
        self.path = path
        self.error = error
        self.left_lines = left_lines


def _append(path: Path, lines: list[bytes]) -> _Appended:
    """Append ``lines`` to ``path`` (its lock held) with one write and ``fsync``."""
    size: int | None = None
    try:
        # Unbuffered: a failed write can be rolled back without a buffer flushing later.
        with open(path, "a+b", buffering=0) as handle:
            size = handle.seek(0, os.SEEK_END)
            payload = b"".join(lines)
            if size:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    payload = b"\n" + payload  # terminate a torn line left by a crash
            _write_all(handle, payload)
            os.fsync(handle.fileno())
            return _Appended(path, size, count_lines(handle))
    except BaseException as error:
        rolled_back = size is None or _truncate(path, size)
        if not isinstance(error, OSError):
            raise
        left = None if rolled_back else _lines_in(path)
        raise _AppendError(path, error, left) from error


def _truncate(path: Path, size: int) -> bool:
    """Cut ``path`` back to ``size`` bytes and persist that; False (logged) if impossible."""
    try:
        with open(path, "r+b", buffering=0) as handle:
            handle.truncate(size)
            os.fsync(handle.fileno())
    except OSError as error:
        logger.error("archive: could not roll back %s to %d bytes: %s", path, size, error)
        return False
    return True


def _lines_in(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return count_lines(handle)
    except OSError:
        return 0
