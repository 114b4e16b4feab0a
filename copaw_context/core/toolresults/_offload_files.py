"""The offload store's helpers (:mod:`.offload`): the names a cleanup keeps, a kept file's
refreshed time, a saved file's tail read from disk, and :class:`OffloadBlobs`, what the
offload asks of the workspace store (:class:`~.store_blobs.StoreBlobs`; a protocol, so the
offload does not import the store)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from copaw_context.core.toolresults._offload_write import SavedText
from copaw_context.core.toolresults._saved_tails import tail_of

__all__ = ["OffloadBlobs", "read_tail", "referenced_names", "refresh"]

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
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - max_bytes))
            data = handle.read()
    except OSError:
        return None
    return tail_of(data, size, max_bytes)
