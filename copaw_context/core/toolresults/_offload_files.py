"""The offload store's helpers (:mod:`.offload`): the names a cleanup keeps, a kept file's
refreshed time, a saved file's tail read from disk, :class:`OffloadBlobs`, what the offload
asks of a shared workspace store (:class:`~.store_blobs.StoreBlobs`; a protocol, so the
offload does not import it), and :class:`FileBlobs`, what it asks of the workspace's file
store (:class:`~copaw_context.core.store.files.FileStore`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

from copaw_context.core.store.protocol import BlobInfo, StoreError
from copaw_context.core.toolresults._offload_write import SavedText
from copaw_context.core.toolresults._saved_tails import tail_of
from copaw_context.core.workspace.safe_open import ReadFailure

__all__ = [
    "FileBlobs",
    "OffloadBlobs",
    "blob_starts_with",
    "read_tail",
    "read_tail_of",
    "referenced_names",
    "refresh",
    "starts_with",
]

logger = logging.getLogger("copaw_context")


class OffloadBlobs(Protocol):
    """The saved results in a workspace store (see :mod:`.store_blobs` for each call)."""

    async def save(
        self, directory: Path, parts: Sequence[str], separator: str
    ) -> SavedText | None: ...

    async def fill_tails(
        self,
        directory: Path,
        paths: Sequence[str | Path],
        tails: list[str | None],
        owns: Callable[[str | Path], bool],
        max_bytes: int,
    ) -> None: ...

    async def expire(
        self, folder: Path, max_age_seconds: float, keep: set[str], manifests: tuple[float, float]
    ) -> list[Path]: ...

    async def record_manifest(
        self, directory: Path, session_id: str, names: frozenset[str], now: float
    ) -> None: ...

    async def sync(self) -> None: ...


class FileBlobs(Protocol):
    """The blobs of a workspace's file store (see :class:`~copaw_context.core.store.files.
    FileStore` for each call: the protocol's ``put_blob`` and ``expire_blobs``, the latter's
    keywords and ``open_blob`` beyond it)."""

    @property
    def workspace(self) -> Path: ...

    async def put_blob(
        self, folder: str, parts: Sequence[str], separator: str = "\n"
    ) -> BlobInfo: ...

    async def expire_blobs(
        self,
        folder: str,
        max_age_seconds: float,
        referenced: Collection[str | Path] = (),
        *,
        manifest_age_seconds: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> list[str]: ...

    def open_blob(self, key: str, roots: Sequence[Path] = ()) -> tuple[BinaryIO, Path]: ...


def referenced_names(items: list[str | Path]) -> set[str]:
    """File names of ``items`` (names or paths), and of their targets for paths via links."""
    names: set[str] = set()
    for item in items:
        try:
            path = Path(item)
            names.add(path.name)
            if len(path.parts) > 1:  # a path: a link elsewhere may name one of our files
                names.add(path.expanduser().resolve().name)
        except (OSError, ValueError, RuntimeError, TypeError) as error:
            logger.debug("offload cleanup: ignoring unusable reference %r: %s", item, error)
    return names


def refresh(dir_fd: int, path: Path, info: os.stat_result, now: float) -> None:
    """Set a referenced file's mtime to ``now`` (never following links); best effort."""
    if info.st_mtime >= now:
        return
    try:
        os.utime(path.name, (info.st_atime, now), dir_fd=dir_fd, follow_symlinks=False)
    except OSError as error:
        logger.warning("offload cleanup: cannot refresh the time of referenced %s: %s", path, error)


def read_tail(path: Path, max_bytes: int) -> str | None:
    """The tail of the file ``path`` (``None`` when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            return read_tail_of(handle, max_bytes)
    except OSError:
        return None


def read_tail_of(handle: BinaryIO, max_bytes: int) -> str:
    """The tail of an open file: its last ``max_bytes`` from their first whole line."""
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - max_bytes))
    return tail_of(handle.read(), size, max_bytes)


def starts_with(path: Path, head: bytes) -> bool | None:
    """Whether the file ``path`` begins with ``head`` (blocking): ``None`` when there is no
    such file, ``False`` when it cannot be read (the file code without a file store)."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(head)) == head
    except FileNotFoundError:
        return None
    except OSError:
        return False


def blob_starts_with(files: FileBlobs, key: str, real: Path, head: bytes) -> bool | None:
    """Whether blob ``key`` of the file store is the file ``real`` itself (not a link to
    another: a link is not what the store wrote) and begins with ``head``, read through one
    confined open (``open_blob``; blocking). ``None`` when there is no such file (it may be
    a blob of a shared store); ``False`` for a link, a path out of the workspace, a file
    that cannot be read."""
    try:
        handle, opened = files.open_blob(key)
    except ReadFailure:
        return False if os.path.lexists(real) else None
    except StoreError:
        return False
    try:
        with handle:
            return opened == real and handle.read(len(head)) == head
    except OSError:
        return False
