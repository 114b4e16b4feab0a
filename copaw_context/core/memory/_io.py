"""The memory package's name for :mod:`copaw_context.core.workspace.locked_io` (locks, atomic
replaces, locked appends), which the file workspace store shares."""

from __future__ import annotations

from copaw_context.core.toolresults._offload_write import fsync_directory
from copaw_context.core.workspace.locked_io import (
    AnyLock,
    ConfinedLock,
    acquire_async,
    append_bytes,
    atomic_write,
    file_lock,
    locked,
)

__all__ = [
    "AnyLock",
    "ConfinedLock",
    "acquire_async",
    "append_bytes",
    "atomic_write",
    "file_lock",
    "fsync_directory",
    "locked",
]
