"""The memory files of a workspace, in QwenPaw's layout.

``<workspace>/MEMORY.md`` holds lasting facts (user preferences, habits, lessons) in ``## ``
sections; an older layout's ``Memory.md`` is read (and written in place) when there is no
``MEMORY.md``. ``<workspace>/<memory_dir>/YYYY-MM-DD.md`` is the log of one local day.

Without a shared store they reach storage through the workspace's file store
(:class:`~copaw_context.core.store.files.FileStore`, the ``files`` given, else one over the
workspace; :mod:`._stored`): MEMORY.md is a document read with ``get_document`` and put with
``put_document`` and its version (compare-and-swap: a change is made again on the new text
when another writer came first), the daily logs are appended with its ``append_text``. The
files are those of the file code, byte for byte: an inter-process lock per file
(``<memory_dir>/.locks/``, MEMORY.md's taken by the legacy ``Memory.md`` too), log entries
appended with one write plus ``fsync``, MEMORY.md replaced atomically (temp file, ``fsync``,
``os.replace``) after a dated copy of the old text in
``<memory_dir>/backups/MEMORY.YYYY-MM-DDTHHMMSS.md``. Only these files are ever written:
section titles and dates never become paths.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Literal

from copaw_context.core.memory._checks import (
    MemoryFileError,
    check_content,
    check_edited,
    check_memory_text,
    check_section_title,
)
from copaw_context.core.memory._io import AnyLock, atomic_write, file_lock
from copaw_context.core.memory._sharing import SharedFiles
from copaw_context.core.memory._stored import StoredFiles, write_backup
from copaw_context.core.memory.markdown import format_log_entry, normalise_text, replace_section
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.protocol import Document
from copaw_context.core.toolresults.truncation import (
    NOTICE_BUDGET_BYTES,
    count_lines,
    notice_path,
    truncate_text_output,
)
from copaw_context.core.workspace.confine import (
    OutsideWorkspaceError,
    check_inside,
    read_bytes_inside,
)

__all__ = [
    "DAILY_LOG",
    "LEGACY_MEMORY_FILE",
    "MEMORY_FILE",
    "MemoryFileError",
    "MIN_PROMPT_MAX_BYTES",
    "MemoryFiles",
    "check_section_title",
    "render_memory_prompt",
]

logger = logging.getLogger("copaw_context")

MEMORY_FILE = "MEMORY.md"
LEGACY_MEMORY_FILE = "Memory.md"
MIN_PROMPT_MAX_BYTES = NOTICE_BUDGET_BYTES + 100
"""The smallest ``max_bytes`` :func:`render_memory_prompt` accepts (room for the notice)."""
DAILY_LOG = re.compile(r"(\d{4}-\d{2}-\d{2})\.md")
_SOURCE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


def render_memory_prompt(text: str, file_path: str, max_bytes: int) -> str:
    """``text`` (MEMORY.md) bounded to ``max_bytes`` UTF-8 bytes for a system prompt.

    A longer text is cut and ends with the project's truncation notice naming ``file_path``
    and the line to continue at, the notice counted within ``max_bytes``.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an int, got {max_bytes!r}")
    if max_bytes < MIN_PROMPT_MAX_BYTES:
        raise ValueError(f"max_bytes must be at least {MIN_PROMPT_MAX_BYTES}, got {max_bytes}")
    text = normalise_text(text)
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    return truncate_text_output(
        text,
        total_lines=count_lines(text),
        max_bytes=max_bytes - NOTICE_BUDGET_BYTES,
        file_path=file_path,
        recut_notice=False,
    )


class MemoryFiles:
    """MEMORY.md and the daily logs of one workspace."""

    def __init__(
        self,
        workspace: str | Path,
        memory_dir: str = "memory",
        *,
        tz: tzinfo | None = None,
        clock: Callable[[], datetime] | None = None,
        lock_timeout: float = 30.0,
        keep_backups: int = 50,
        max_entry_bytes: int = 16384,
        extra_read_roots: Sequence[str | Path] = (),
        files: FileStore | None = None,
    ) -> None:
        self._workspace = Path(workspace).expanduser().absolute()
        self._extra_read_roots = tuple(Path(r).expanduser().absolute() for r in extra_read_roots)
        relative = Path(memory_dir)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise MemoryFileError(
                f"memory_dir must be a folder relative to the workspace, got {memory_dir!r}"
            )
        self._memory_dir = self._workspace / relative
        self._tz = tz
        self._clock = clock
        self._lock_timeout = lock_timeout
        self._keep_backups = max(1, keep_backups)
        self._max_entry_bytes = max_entry_bytes
        self._stored = StoredFiles(
            files or FileStore(self._workspace),
            self._workspace,
            self._extra_read_roots,
            lock_timeout,
        )
        self.shared: SharedFiles | None = None
        """MEMORY.md and the logs in a shared workspace store (``memory.shared``), the files
        being its copies; ``None``: the files are the memory."""

    @property
    def workspace(self) -> Path:
        """The absolute workspace folder."""
        return self._workspace

    @property
    def file_store(self) -> FileStore:
        """The workspace's file store the files are reached through (without ``shared``);
        set it to the engine's (a store of another workspace: the file code itself)."""
        return self._stored.store

    @file_store.setter
    def file_store(self, store: FileStore) -> None:
        self._stored.store = store

    @property
    def stored(self) -> StoredFiles:
        """The files by path in :attr:`file_store` (the consolidation's record too)."""
        return self._stored

    @property
    def memory_dir(self) -> Path:
        """The absolute folder of the daily logs."""
        return self._memory_dir

    @property
    def backups_dir(self) -> Path:
        """Where MEMORY.md is copied before each rewrite."""
        return self._memory_dir / "backups"

    @property
    def lock_timeout(self) -> float:
        """Seconds a write waits for another writer before it fails."""
        return self._lock_timeout

    def now(self) -> datetime:
        """The current local time (from the injected clock, if any), timezone-aware."""
        if self._clock is not None:
            current = self._clock()
            return current if current.tzinfo else current.astimezone(self._tz)
        return datetime.now(self._tz) if self._tz else datetime.now().astimezone()

    def memory_path(self) -> Path:
        """MEMORY.md, or the legacy Memory.md when only that exists (it is then kept in use)."""
        main = self._workspace / MEMORY_FILE
        legacy = self._workspace / LEGACY_MEMORY_FILE
        if not main.exists() and legacy.is_file():
            return legacy
        return main

    def daily_path(self, day: date) -> Path:
        """The log file of ``day`` (a :class:`datetime.date`; never text)."""
        if not isinstance(day, date) or isinstance(day, datetime):
            raise MemoryFileError(f"a day must be a datetime.date, got {day!r}")
        return self._memory_dir / f"{day.isoformat()}.md"

    def lock_path(self, name: str) -> Path:
        """The lock file guarding the memory file ``name`` (a fixed or dated name)."""
        check_inside(self._memory_dir, self._workspace, write=True)
        return self._memory_dir / ".locks" / f"{name}.lock"

    def daily_logs(self) -> list[tuple[date, Path]]:
        """Every ``YYYY-MM-DD.md`` in the memory folder with a valid date, oldest first
        (a folder or log leading outside the workspace is skipped; listed through the file
        store, ``list_texts``)."""
        logs: list[tuple[date, Path]] = []
        for name in self._stored.names(self._memory_dir, DAILY_LOG):
            match = DAILY_LOG.fullmatch(name)
            try:
                if match:
                    logs.append((date.fromisoformat(match.group(1)), self._memory_dir / name))
            except ValueError:
                continue
        return sorted(logs)

    # --- reading ---------------------------------------------------------------------------

    def read_memory_sync(self) -> str:
        """The text of MEMORY.md (or Memory.md); "" when there is none (blocking)."""
        return _text(self._stored.read_sync(self.memory_path()))

    async def read_memory(self) -> str:
        """:meth:`read_memory_sync` off the event loop (brought up to date with a shared
        store first; the local copy when the store cannot be reached)."""
        if self.shared is not None:
            try:
                await self.shared.pull()
            except MemoryFileError as error:
                logger.warning("memory: MEMORY.md read from the local copy: %s", error)
        path = await asyncio.to_thread(self.memory_path)
        return _text(await self._stored.read(path))

    async def sync_logs(self, days: list[date] | None = None) -> None:
        """Copy what other replicas logged (with a shared store; else nothing to do)."""
        if self.shared is not None:
            await self.shared.refresh_logs(days)

    async def read_log(self, day: date) -> str:
        """The text of the log of ``day``; "" when there is none."""
        path = self.daily_path(day)
        await self.sync_logs([day])
        return _text(await self._stored.read(path))

    async def render_for_prompt(self, max_bytes: int) -> str:
        """MEMORY.md for the system prompt, bounded by :func:`render_memory_prompt`."""
        try:
            text = await self.read_memory()
        except OutsideWorkspaceError as error:  # never an outside file in the system prompt
            logger.warning("memory: MEMORY.md not shown: %s", error)
            return ""
        if not text.strip():
            return ""
        path = notice_path(self.memory_path(), self._workspace)
        return render_memory_prompt(text, path, max_bytes)

    # --- the daily log ---------------------------------------------------------------------

    async def append_log(
        self, text: str, *, source: str = "agent", when: datetime | None = None
    ) -> Path:
        """Append ``text`` to the log of the local day of ``when`` (default: now).

        Each list item becomes ``- HH:MM [source] ...``; a text without bullets is one item.
        Raises :class:`MemoryFileError` for empty or oversized text or a bad ``source``.
        """
        if not isinstance(source, str) or not _SOURCE.fullmatch(source):
            raise MemoryFileError(
                f"the source tag must be 1-32 lowercase letters, digits, '_' or '-', got {source!r}"
            )
        if not isinstance(text, str):
            raise MemoryFileError(f"the log entry must be text, got {type(text).__name__}")
        size = len(normalise_text(text).encode("utf-8"))
        if size > self._max_entry_bytes:
            raise MemoryFileError(
                f"the log entry is {size} bytes, over the {self._max_entry_bytes} allowed; "
                "keep entries short and put long material in a file"
            )
        moment = when if when is not None else self.now()
        if moment.tzinfo is None:
            moment = moment.astimezone(self._tz)
        entry = format_log_entry(text, source, moment)
        if not entry:
            raise MemoryFileError("the log entry is empty; write what should be remembered")
        path = self.daily_path(moment.date())
        header = f"# {moment.date().isoformat()}\n\n"
        if self.shared is not None:
            await self.shared.append_log(path, entry, header)
            return path
        lock = await asyncio.to_thread(self.lock_path, path.name)
        await self._stored.append(path, entry.encode("utf-8"), header.encode(), lock)
        return path

    # --- MEMORY.md -------------------------------------------------------------------------

    def memory_lock(self) -> AnyLock:
        """A new (unacquired) inter-process lock of MEMORY.md, for read-modify-write spans."""
        return file_lock(self.lock_path(MEMORY_FILE), self._lock_timeout, self._workspace)

    def write_memory_locked(self, text: str) -> Path | None:
        """Replace MEMORY.md with ``text`` (the caller holds :meth:`memory_lock`; the shared
        store's sync does, the file store's ``put_document`` takes the same lock).

        The old text is copied to a dated backup first; returns the backup (``None`` when
        there was no old text). Unchanged text is not written and returns ``None``.
        """
        path = self.memory_path()
        try:
            old = self._read(path)
        except FileNotFoundError:
            old = b""
        new = normalise_text(text).encode("utf-8")
        if new == old:
            return None
        backup = self.backup(old) if old.strip() else None
        atomic_write(path, new, self._workspace)
        return backup

    async def write_memory(self, text: str) -> Path | None:
        """Replace MEMORY.md with ``text`` under its lock (dated backup first)."""
        return await self.update_memory(lambda _: text)

    async def update_memory(self, change: Callable[[str], str]) -> Path | None:
        """Replace MEMORY.md with ``change(current text)`` (dated backup first; the backup
        returned, ``None`` when none or nothing changed), put with compare-and-swap under its
        lock and made again when another writer came first (for up to the lock timeout): in
        the file store (``put_document``), or in the shared store when there is one."""
        if self.shared is not None:
            return await self.shared.update(change)
        lock = await asyncio.to_thread(self.lock_path, MEMORY_FILE)

        def changed(old: bytes) -> bytes:
            return normalise_text(change(_decoded(old))).encode("utf-8")

        return await self._stored.update(
            self.memory_path, changed, lock, self.backup, self._lock_timeout
        )

    async def edit_section(
        self, section: str, content: str, mode: Literal["add", "replace"] = "add"
    ) -> Path | None:
        """Add ``content`` to the ``## section`` of MEMORY.md, or replace that section's body.

        A missing section is created at the end; titles match case-insensitively. Returns
        the backup of the previous MEMORY.md (``None`` when there was none or nothing
        changed). Raises :class:`MemoryFileError` for a bad title, mode or content.
        """
        if mode not in ("add", "replace"):
            raise MemoryFileError(f"mode must be 'add' or 'replace', got {mode!r}")
        title = check_section_title(section)
        body = check_content(content, allow_empty=mode == "replace")

        def edit(current: str) -> str:
            check_memory_text(current, self.memory_path().name)
            updated = replace_section(current, title, body, add=mode == "add")
            check_edited(updated, title)
            return updated

        return await self.update_memory(edit)

    def _read(self, path: Path) -> bytes:
        """The bytes of a memory file, confined (reads may use the extra read roots)."""
        return read_bytes_inside(path, self._workspace, self._extra_read_roots)

    def backup(self, data: bytes) -> Path:
        """Copy ``data`` (the old MEMORY.md) to a dated backup; the oldest beyond
        ``keep_backups`` go."""
        stamp = self.now().strftime("%Y-%m-%dT%H%M%S")
        return write_backup(self.backups_dir, stamp, data, self._workspace, self._keep_backups)


def _decoded(data: bytes) -> str:
    """A memory file's text: bad bytes replaced, a leading byte order mark dropped (an
    editor's UTF-8 signature; it would hide the first heading)."""
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _text(doc: Document) -> str:
    return "" if doc.data is None else _decoded(doc.data)
