"""``CountingStore``: the workspace's file store, counting the operations called on it.

The one double of the workspace store's role: a real
:class:`~copaw_context.core.store.files.FileStore` (the same files, the same bytes) that
records the name of every operation called, so a test shows which step reached storage
through the store. Give it to an engine before its agent is made::

    store = CountingStore(workspace)
    hook.engine.context.workspace_store = store   # the offload, its cleanup, read_file,
                                                  # the request cut, the dialog archive,
                                                  # the memory files
    ...
    assert store.calls["put_blob"] == 1

Calls the store makes of itself count too (``search`` reads its streams).
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from copaw_context.core.store.files import FileStore

__all__ = ["COUNTED", "CountingStore"]

COUNTED = (
    "append",
    "read",
    "streams",
    "stream_lengths",
    "line_counts",
    "put_blob",
    "read_lines",
    "blob_info",
    "list_blobs",
    "expire_blobs",
    "open_blob",
    "get_document",
    "read_document",
    "put_document",
    "append_text",
    "list_texts",
    "acquire_lease",
    "renew_lease",
    "release_lease",
    "search",
    "sync",
    "close",
)
"""The operations counted: the protocol's, and ``open_blob``, ``line_counts``,
``read_document``, ``append_text`` and ``list_texts`` (the file store's beyond it)."""


class CountingStore(FileStore):
    """A :class:`FileStore` whose :attr:`calls` count each operation by name (``keys``: the
    first argument of each call, in order, by name)."""

    def __init__(self, workspace: str | Path, workspace_id: str | None = None, **options: Any):
        super().__init__(workspace, workspace_id, **options)
        self.calls: Counter[str] = Counter()
        self.keys: dict[str, list[object]] = {}

    def note(self, name: str, args: tuple[object, ...]) -> None:
        """Count one call of ``name`` (the operations do; a test need not)."""
        self.calls[name] += 1
        self.keys.setdefault(name, []).append(args[0] if args else None)


def _counted(name: str) -> Callable[..., Any]:
    real = getattr(FileStore, name)
    if inspect.iscoroutinefunction(real):

        @functools.wraps(real)
        async def counted_async(self: CountingStore, *args: Any, **kwargs: Any) -> Any:
            self.note(name, args)
            return await real(self, *args, **kwargs)

        return counted_async

    @functools.wraps(real)
    def counted(self: CountingStore, *args: Any, **kwargs: Any) -> Any:
        self.note(name, args)
        return real(self, *args, **kwargs)

    return counted


for _name in COUNTED:
    setattr(CountingStore, _name, _counted(_name))
