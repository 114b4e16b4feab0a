"""Dialog archive: the full raw messages removed from the context by compaction.

One JSON object per line in ``<directory>/YYYY-MM-DD.jsonl``, dated by each message's own
local timestamp. Unlike the reference SaveDialog (no lock, no fsync, no session id, errors
only logged), every line names its session and agent, each file is appended under an
inter-process lock with one write plus ``fsync``, and any failure raises
:class:`~copaw_context.core.errors.ArchiveError` so the caller keeps the messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any

import filelock

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


@dataclass(frozen=True)
class ArchivedFile:
    """An archive file and its total number of lines."""

    path: Path
    lines: int


class ArchivePartialWriteError(ArchiveError):
    """Some files of a batch were written before another one failed.

    ``written`` lists the files that now hold their part of the batch; ``failed`` is the
    file that could not be written (it was rolled back to its previous size when possible).
    """

    def __init__(self, message: str, written: Sequence[ArchivedFile], failed: Path) -> None:
        self.written = tuple(written)
        self.failed = failed
        super().__init__(message)


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
    ) -> list[ArchivedFile]:
        """Append ``messages`` (full JSON-able dicts) to the file of each one's local date.

        ``timestamps[i]`` is the timestamp of ``messages[i]``; a missing or unparseable one
        means now. Returns the files written with their line counts after the append.
        Raises :class:`ArchiveError` on any failure; a batch that cannot be serialised
        writes nothing.
        """
        if len(messages) != len(timestamps):
            raise ValueError(
                f"append() got {len(messages)} messages but {len(timestamps)} timestamps; "
                "pass one timestamp (or None) per message"
            )
        if not messages:
            return []
        # Serialise on the caller's thread: a consistent snapshot, checked before any write.
        batches = self._encode_batch(messages, timestamps)
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
    ) -> dict[date, list[bytes]]:
        now = self._now()
        archived_at = now.isoformat()
        batches: dict[date, list[bytes]] = {}
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
            record = {
                "session_id": self._session_id,
                "agent_name": self._agent_name,
                "archived_at": archived_at,
                "timestamp": timestamp,
                "message": dict(message),
            }
            try:
                line = _dump_line(record)
            except (TypeError, ValueError, RecursionError) as error:
                raise ArchiveError(
                    f"cannot archive message #{index} to {target}: it is not JSON-serialisable "
                    f"({type(error).__name__}: {error}); nothing was written"
                ) from error
            batches.setdefault(when.date(), []).append(line)
        return batches

    def _path_for(self, day: date) -> Path:
        return self._directory / f"{day.isoformat()}.jsonl"

    def _write_batches(self, batches: dict[date, list[bytes]]) -> list[ArchivedFile]:
        try:
            self._directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ArchiveError(
                f"cannot create archive directory {self._directory}: {error}; nothing was written"
            ) from error
        written: list[ArchivedFile] = []
        for day in sorted(batches):
            path = self._path_for(day)
            try:
                written.append(ArchivedFile(path, self._append_locked(path, batches[day])))
            except (OSError, filelock.Timeout) as error:
                cause = (
                    f"timed out after {self._lock_timeout:g} s waiting for {path}.lock "
                    "(another process is writing it)"
                    if isinstance(error, filelock.Timeout)
                    else f"{type(error).__name__}: {error}"
                )
                done = ", ".join(str(item.path) for item in written) or "none"
                message = f"cannot append to archive file {path}: {cause}; already written: {done}"
                if written:
                    raise ArchivePartialWriteError(message, written, path) from error
                raise ArchiveError(message) from error
        return written

    def _append_locked(self, path: Path, lines: list[bytes]) -> int:
        lock = filelock.FileLock(str(path) + ".lock", timeout=self._lock_timeout)
        # Unbuffered: a failed write can be rolled back without a buffer flushing later.
        with lock, open(path, "a+b", buffering=0) as handle:
            size = handle.seek(0, os.SEEK_END)
            payload = b"".join(lines)
            if size:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    payload = b"\n" + payload  # terminate a torn line left by a crash
            try:
                _write_all(handle, payload)
                os.fsync(handle.fileno())
            except BaseException:
                _roll_back(handle, size, path)
                raise
            return _count_lines(handle)

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
                with open(path, "rb") as handle:
                    files.append(ArchivedFile(path, _count_lines(handle)))
            except FileNotFoundError:
                continue
            except OSError as error:
                raise ArchiveError(f"cannot read archive file {path}: {error}") from error
        return files


def read_archive(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the records of one archive file; torn or unparseable lines are logged and skipped."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8"))
            except ValueError as error:
                logger.warning(
                    "archive %s line %d is torn or invalid, skipped: %s", path, number, error
                )
                continue
            if not isinstance(record, dict):
                logger.warning("archive %s line %d is not a JSON object, skipped", path, number)
                continue
            yield record


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


def _count_lines(handle: Any) -> int:
    """Count lines reading in fixed-size chunks; a final unterminated line counts too."""
    handle.seek(0)
    count = 0
    last = b""
    while chunk := handle.read(_COUNT_CHUNK_BYTES):
        count += chunk.count(b"\n")
        last = chunk
    if last and not last.endswith(b"\n"):
        count += 1
    return count


def _roll_back(handle: Any, size: int, path: Path) -> None:
    try:
        handle.truncate(size)
        os.fsync(handle.fileno())
    except OSError as error:
        logger.error("archive: could not roll back partial write to %s: %s", path, error)
