"""How the memory files reach storage without a shared store: the workspace's file store.

MEMORY.md (or the legacy ``Memory.md``) and ``<memory_dir>/.consolidated.json`` are its
documents (``get_document`` / ``put_document`` with the version), the daily logs its text
logs (``append_text``, beyond the protocol: the store's streams are JSONL). A file whose
path is no key of the store (a memory folder named with other characters, or a store of
another workspace) is reached by the same file code called directly
(:mod:`copaw_context.core.store.file_documents`). Either way the errors are the file code's
(``OSError``, :class:`~copaw_context.core.workspace.confine.OutsideWorkspaceError`,
``filelock.Timeout``; a changed version: :class:`VersionConflictError`), so the memory
tools word them as before. Private to :mod:`copaw_context.core.memory`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import filelock

from copaw_context.core.memory._checks import MemoryFileError
from copaw_context.core.store.file_documents import (
    append_text_file,
    list_text_files,
    put_file_document,
    read_file_document,
)
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.lines import check_key
from copaw_context.core.store.protocol import Document, StoreError, VersionConflictError
from copaw_context.core.workspace.confine_write import writable_dir
from copaw_context.core.workspace.locked_io import atomic_write

__all__ = ["StoredFiles", "write_backup"]

logger = logging.getLogger("copaw_context")


@contextmanager
def _file_errors() -> Iterator[None]:
    """The file code's error for a store's wrapped one (a changed version stays itself)."""
    try:
        yield
    except VersionConflictError:
        raise
    except StoreError as error:
        cause = error.__cause__
        if isinstance(cause, OSError | filelock.Timeout):
            raise cause from None
        raise


class StoredFiles:
    """The memory files of one workspace in its :class:`FileStore`, by path."""

    def __init__(
        self, store: FileStore, workspace: Path, roots: tuple[Path, ...], lock_timeout: float
    ) -> None:
        self.store = store
        self._workspace = workspace
        self._roots = roots
        self._lock_timeout = lock_timeout

    def key(self, path: Path) -> str | None:
        """The store's key of ``path``; ``None`` when it has none (the file code then)."""
        if self.store.workspace != self._workspace:
            return None
        try:
            return check_key(path.relative_to(self._workspace).as_posix())
        except (ValueError, StoreError):
            return None

    def read_sync(self, path: Path) -> Document:
        """The document at ``path`` (blocking; ``data=None`` when there is none)."""
        key = self.key(path)
        if key is None:
            return read_file_document(path.name, path, self._workspace, self._roots)
        with _file_errors():
            return self.store.read_document(key, self._roots)

    async def read(self, path: Path) -> Document:
        """The document at ``path`` (``get_document``)."""
        key = self.key(path)
        if key is None:
            return await asyncio.to_thread(self.read_sync, path)
        with _file_errors():
            return await self.store.get_document(key, roots=self._roots)

    async def put(
        self,
        path: Path,
        data: bytes,
        version: str,
        *,
        lock: Path | Literal[False],
        before: Callable[[Document], None] | None = None,
    ) -> Document:
        """``put_document`` of ``data`` at ``path`` if its version is still ``version``, under
        ``lock`` (``False``: the caller's lease excludes every other writer)."""
        key = self.key(path)
        if key is None:
            return await asyncio.to_thread(
                put_file_document,
                path.name,
                path,
                data,
                version,
                workspace=self._workspace,
                lock=lock or None,
                lock_timeout=self._lock_timeout,
                roots=self._roots,
                before=before,
            )
        with _file_errors():
            return await self.store.put_document(
                key, data, version, lock=lock, roots=self._roots, before=before
            )

    async def update(
        self,
        where: Callable[[], Path],
        change: Callable[[bytes], bytes],
        lock: Path,
        backup: Callable[[bytes], Path],
        retry_seconds: float,
    ) -> Path | None:
        """Replace the document at ``where()`` with ``change(its bytes)`` by compare-and-swap
        under ``lock`` (``backup(old bytes)`` first, unless they are blank), made again on the
        new bytes when another writer came first, for up to ``retry_seconds``. Returns the
        backup (``None``: none, or nothing changed). ``where`` and ``change`` run in a worker
        thread."""
        loop = asyncio.get_running_loop()
        deadline, tries = loop.time() + retry_seconds, 0
        while True:
            path = await asyncio.to_thread(where)
            doc = await self.read(path)
            old = doc.data or b""
            new = await asyncio.to_thread(change, old)
            if new == old:
                return None
            made: list[Path] = []

            def keep(_: Document, old: bytes = old, made: list[Path] = made) -> None:
                if old.strip():  # under the lock, the version matched: before the replace
                    made.append(backup(old))

            try:
                await self.put(path, new, doc.version, lock=lock, before=keep)
                return made[0] if made else None
            except VersionConflictError:
                tries += 1
            if loop.time() >= deadline:
                raise MemoryFileError(
                    f"{path.name} kept changing ({tries} tries in {retry_seconds:g} s); "
                    "nothing was written, try again"
                )
            await asyncio.sleep(random.uniform(0, min(0.2, 0.005 * 2**tries)))

    def names(self, directory: Path, pattern: re.Pattern[str]) -> list[str]:
        """The names in ``directory`` that ``pattern`` matches whole, sorted (blocking;
        ``list_texts``)."""
        key = self.key(directory)
        if key is None:
            return list_text_files(directory, pattern, self._workspace, self._roots)
        with _file_errors():
            return self.store.list_texts(key, pattern, self._roots)

    async def append(self, path: Path, data: bytes, header: bytes, lock: Path) -> None:
        """Append ``data`` to the log at ``path`` under ``lock`` (``append_text``)."""
        key = self.key(path)
        if key is None:
            await asyncio.to_thread(
                append_text_file,
                path,
                data,
                header,
                workspace=self._workspace,
                lock=lock,
                lock_timeout=self._lock_timeout,
            )
            return
        await self.store.append_text(key, data, header, lock=lock)


def write_backup(directory: Path, stamp: str, data: bytes, workspace: Path, keep: int) -> Path:
    """Copy ``data`` (the old MEMORY.md) to ``directory/MEMORY.<stamp>.md`` (``-1``, ``-2``
    ... when taken), then remove the oldest backups beyond ``keep``."""
    candidate = directory / f"MEMORY.{stamp}.md"
    counter = 1
    while candidate.exists():
        candidate = directory / f"MEMORY.{stamp}-{counter}.md"
        counter += 1
    atomic_write(candidate, data, workspace)  # the folder created, inside the workspace
    _prune_backups(directory, workspace, keep)
    return candidate


def _prune_backups(directory: Path, workspace: Path, keep: int) -> None:
    """Remove the oldest backups beyond ``keep`` (by descriptor: never through a folder
    swapped for a link)."""
    try:
        with writable_dir(directory, workspace, create=False) as dir_fd:
            found = []
            for name in os.listdir(dir_fd):
                if name.startswith("MEMORY.") and name.endswith(".md"):
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):
                        found.append((info.st_mtime_ns, name))
            for _, name in sorted(found)[: max(0, len(found) - keep)]:
                try:
                    os.unlink(name, dir_fd=dir_fd)
                except OSError as error:
                    logger.warning(
                        "memory: could not remove old backup %s: %s", directory / name, error
                    )
    except OSError as error:
        logger.warning("memory: could not prune the backups in %s: %s", directory, error)
