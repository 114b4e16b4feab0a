"""The file store's documents and text logs: plain files, written as the memory files were.

A document (MEMORY.md, the legacy ``Memory.md``, ``memory/.consolidated.json``, the offload
manifests) is a file replaced atomically (temp file, ``fsync``, ``os.replace``:
:func:`~copaw_context.core.workspace.locked_io.atomic_write`) under its lock file, after a
compare of its version (the SHA-256 of its bytes); a text log (the ``.md`` daily logs) gets
one write plus ``fsync`` under its lock, a new file its header first
(:func:`~copaw_context.core.workspace.locked_io.append_bytes`). Reads are confined to the
workspace and the caller's extra read roots (``read_bytes_inside``).

:class:`FileDocuments` is the file store's part that reaches them by key
(:class:`~copaw_context.core.store.files.FileStore` is one); the memory files call the
functions directly for a memory folder whose name is no store key (the same writer). The
functions block (call them in a worker thread) and raise what the file code raises
(``OSError``, :class:`~copaw_context.core.workspace.confine.OutsideWorkspaceError`,
``filelock.Timeout``) and :class:`~copaw_context.core.store.protocol.VersionConflictError`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import filelock

from copaw_context.core.store.lines import check_key
from copaw_context.core.store.protocol import Document, StoreError, VersionConflictError
from copaw_context.core.workspace.confine import (
    OutsideWorkspaceError,
    check_inside,
    read_bytes_inside,
)
from copaw_context.core.workspace.locked_io import append_bytes, atomic_write, locked

__all__ = [
    "FileDocuments",
    "append_text_file",
    "document_version",
    "list_text_files",
    "put_file_document",
    "read_file_document",
]


def document_version(data: bytes) -> str:
    """A document's version: the SHA-256 of its bytes (hex)."""
    return hashlib.sha256(data).hexdigest()


def read_file_document(
    key: str, path: Path, workspace: Path, roots: Sequence[Path] = ()
) -> Document:
    """The document ``key`` at ``path`` (``data=None``, version ``""``: no file)."""
    try:
        data = read_bytes_inside(path, workspace, roots)
    except FileNotFoundError:
        return Document(key, None, "")
    return Document(key, data, document_version(data))


def put_file_document(
    key: str,
    path: Path,
    data: bytes,
    expected_version: str,
    *,
    workspace: Path,
    lock: Path | None,
    lock_timeout: float,
    roots: Sequence[Path] = (),
    before: Callable[[Document], None] | None = None,
) -> Document:
    """Replace ``path`` with ``data`` when its version is still ``expected_version``, under
    the lock file ``lock`` (``None``: none, the caller holds one that excludes every other
    writer). ``before(current)`` runs once the version matched, before the replace (the
    memory files' dated backup)."""

    def put() -> Document:
        current = read_file_document(key, path, workspace, roots)
        if current.version != expected_version:
            raise VersionConflictError(key, expected_version, current.version)
        if before is not None:
            before(current)
        atomic_write(path, data, workspace)
        return Document(key, data, document_version(data))

    if lock is None:
        return put()
    with locked(lock, lock_timeout, workspace):
        return put()


logger = logging.getLogger("copaw_context")


def list_text_files(
    directory: Path, names: re.Pattern[str], workspace: Path, roots: Sequence[Path] = ()
) -> list[str]:
    """The names in ``directory`` of the files ``names`` matches whole, sorted (a folder or a
    file leading outside the workspace and ``roots`` is left out, logged)."""
    try:
        check_inside(directory, workspace, tuple(roots), write=False)
    except OutsideWorkspaceError as error:
        logger.warning("memory: %s", error)
        return []
    try:
        found = [entry.name for entry in directory.iterdir() if entry.is_file()]
    except FileNotFoundError:
        return []
    kept: list[str] = []
    for name in found:
        if not names.fullmatch(name):
            continue
        try:
            check_inside(directory / name, workspace, tuple(roots), write=False)
        except OutsideWorkspaceError as error:
            logger.warning("memory: %s", error)
            continue
        kept.append(name)
    return sorted(kept)


def append_text_file(
    path: Path, data: bytes, header: bytes, *, workspace: Path, lock: Path, lock_timeout: float
) -> None:
    """Append ``data`` to the text log ``path`` under ``lock`` (one write plus ``fsync``; a
    new or empty file gets ``header`` first)."""
    with locked(lock, lock_timeout, workspace):
        append_bytes(path, data, header, workspace)


class FileDocuments:
    """The file store's documents and text logs, by key (a part of
    :class:`~copaw_context.core.store.files.FileStore`: its workspace, lock folder and lock
    timeout)."""

    _workspace: Path
    _locks: Path
    _lock_timeout: float

    def path(self, key: str) -> Path:
        """Where ``key`` is in the workspace."""
        return self._workspace / check_key(key)

    async def get_document(self, key: str, *, roots: Sequence[Path] = ()) -> Document:
        """The file's bytes; its version the SHA-256 of them. Beyond the protocol: ``roots``,
        folders a link may lead to besides the workspace (the memory's extra read roots)."""
        return await asyncio.to_thread(self.read_document, key, roots)

    def read_document(self, key: str, roots: Sequence[Path] = ()) -> Document:
        """:meth:`get_document`, blocking (beyond the protocol: ``read_memory_sync``)."""
        try:
            return read_file_document(key, self.path(key), self._workspace, roots)
        except OSError as error:
            raise StoreError(f"cannot read {key}: {error}") from error

    async def put_document(
        self,
        key: str,
        data: bytes,
        expected_version: str,
        *,
        lock: Path | Literal[False] | None = None,
        roots: Sequence[Path] = (),
        before: Callable[[Document], None] | None = None,
    ) -> Document:
        """Compare and replace under the document's lock (``memory/.locks/<name>.lock``).

        Beyond the protocol: ``lock``, another lock file (MEMORY.md's in a memory folder of
        another name, which the legacy ``Memory.md`` takes too), or ``False`` when the caller
        holds one that excludes every other writer (consolidation's lease, for its record);
        ``roots`` as for :meth:`get_document`; ``before(current)``, run under the lock once
        the version matched, before the replace (the memory files' dated backup)."""
        path = self.path(key)
        held = self._locks / f"{path.name}.lock" if lock is None else lock or None
        workspace, timeout = self._workspace, self._lock_timeout

        def put() -> Document:
            return put_file_document(
                key,
                path,
                data,
                expected_version,
                workspace=workspace,
                lock=held,
                lock_timeout=timeout,
                roots=roots,
                before=before,
            )

        try:
            return await asyncio.to_thread(put)
        except (OSError, filelock.Timeout) as error:
            raise StoreError(f"cannot write {key}: {error}") from error

    def list_texts(
        self, folder: str, names: re.Pattern[str], roots: Sequence[Path] = ()
    ) -> list[str]:
        """Beyond the protocol (blocking): the names of the files in ``folder`` that
        ``names`` matches whole, sorted (the daily logs' listing; one leading outside the
        workspace and ``roots`` left out, logged)."""
        return list_text_files(self.path(folder), names, self._workspace, roots)

    async def append_text(
        self, key: str, data: bytes, header: bytes = b"", *, lock: Path | None = None
    ) -> None:
        """Beyond the protocol (its streams are JSONL): append ``data`` to the text log
        ``key`` (a daily log ``memory/YYYY-MM-DD.md``) under ``lock`` (default
        ``memory/.locks/<name>.lock``) with one write plus ``fsync``, a new file getting
        ``header`` first. Raises what the file code raises (``OSError``,
        ``filelock.Timeout``), not :class:`StoreError`."""
        path = self.path(key)
        held = self._locks / f"{path.name}.lock" if lock is None else lock
        await asyncio.to_thread(
            append_text_file,
            path,
            data,
            header,
            workspace=self._workspace,
            lock=held,
            lock_timeout=self._lock_timeout,
        )
