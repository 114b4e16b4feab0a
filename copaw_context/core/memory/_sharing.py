"""What :class:`~copaw_context.core.memory.files.MemoryFiles` asks of a shared workspace
store (``memory.shared.SharedMemory`` implements it). Private to :mod:`copaw_context.core.memory`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import date
from pathlib import Path
from typing import Protocol

__all__ = ["SharedFiles"]


class SharedFiles(Protocol):
    """The memory files in a shared workspace store, the local files being copies."""

    async def pull(self) -> None: ...

    async def update(self, change: Callable[[str], str]) -> Path | None: ...

    async def append_log(self, path: Path, entry: str, header: str) -> None: ...

    async def refresh_logs(self, days: list[date] | None = None) -> bool: ...

    def hold(self, name: str, wait_seconds: float) -> AbstractAsyncContextManager[None]: ...

    async def pull_document(self, path: Path) -> None: ...

    async def push_document(self, path: Path) -> None: ...
