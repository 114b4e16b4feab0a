"""Long-term memory wired into the engine, the same for every host.

The engine owns one :class:`MemoryService` per workspace. Adapters only translate: they
register :attr:`MemoryService.tools` with the agent, put :meth:`MemoryService.prompt_block`
into its system prompt, and call :meth:`start` / :meth:`close`. The summariser listens to the
engine's compactions (and ``/clear``, ``/new``); the consolidation runs on its cron schedule
while the process runs. Both use the model the host gives for summaries.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory import (
    MemoryConsolidator,
    MemoryFileError,
    MemoryFiles,
    MemoryModel,
    MemoryScheduler,
    MemorySummariser,
    MemoryTools,
    keep_cleared_summary,
)
from copaw_context.core.memory.cleared import CLEARED_DIR, SummaryCopies
from copaw_context.core.memory.shared import SharedMemory
from copaw_context.core.store.copies import StoreOpener
from copaw_context.core.store.files import FileStore

__all__ = ["MemoryService", "memory_prompt_limit"]

logger = logging.getLogger("copaw_context")

_MIN_PROMPT_BYTES = 1000  # the notice of a cut MEMORY.md and a few lines of it


def memory_prompt_limit(config: RunningConfig, window_tokens: int | None) -> int:
    """Bytes of MEMORY.md the system prompt carries: ``memory_prompt_max_bytes``, lowered
    for a small window (``window_tokens``) to about a tenth of it."""
    limit = config.memory.memory_prompt_max_bytes
    if window_tokens is not None:
        limit = min(limit, max(_MIN_PROMPT_BYTES, window_tokens * 2 // 5))
    return limit


_PROMPT_TITLE = {
    "en": "# Long-term memory (MEMORY.md)\n"
    "What you know from earlier sessions; keep it up to date with memory_edit.\n\n",
    "zh": "# 长期记忆（MEMORY.md）\n以往会话中记下的内容；用 memory_edit 保持更新。\n\n",
}


class MemoryService:
    """MEMORY.md, the daily logs, recall, the summariser and the consolidation schedule."""

    def __init__(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        store: StoreOpener | None = None,
        files: FileStore | None = None,
    ) -> None:
        memory = config.memory
        light = config.light_context_config
        self.config = config
        self.workspace = workspace
        self.enabled = memory.enabled
        self.tools = MemoryTools.for_workspace(
            workspace,
            memory.memory_dir,
            light.dialog_path,
            max_results=memory.search_max_results,
            tool_results_dir=light.tool_result_pruning_config.tool_results_cache,
        )
        self._store = store
        """The shared workspace store of MEMORY.md and the logs (``None``: the files)."""
        self._file_store = files
        """The workspace's file store the memory files reach the files through (``None``:
        each makes its own over the workspace)."""
        self._wired: weakref.WeakSet[MemoryFiles] = weakref.WeakSet()
        self.shared = self._share(self.tools.files)
        cleared = workspace / light.dialog_path / CLEARED_DIR
        self._cleared = SummaryCopies.of(store, cleared, workspace) if self.shared else None
        """The cleared summaries in the shared store (``None``: the files)."""
        self._pull_failure: str | None = None
        self._summariser: MemorySummariser | None = None
        self._scheduler: MemoryScheduler | None = None
        self._prompt: tuple[tuple[str, int, int, int], str] | None = None
        self._indexing: asyncio.Task[object] | None = None
        self.closed = False  # close() ran and nothing started background work since

    @property
    def file_store(self) -> FileStore | None:
        """The file store of the memory files (the step context's ``workspace_store``);
        setting it gives it to the tools', the summariser's and the consolidation's files."""
        return self._file_store

    @file_store.setter
    def file_store(self, store: FileStore) -> None:
        self._file_store = store
        for files in self._wired:
            files.file_store = store

    @property
    def summariser(self) -> MemorySummariser | None:
        """The summariser, once a model was bound (see :meth:`bind_model`)."""
        return self._summariser

    def tool_functions(self) -> list[Callable[..., Awaitable[str]]]:
        """``memory_append_log``, ``memory_edit`` and ``memory_search`` (none when disabled)."""
        return self.tools.functions() if self.enabled else []

    def bind_model(self, model: MemoryModel | None) -> None:
        """Give the summariser and the consolidation a model (the first one bound stays)."""
        if not self.enabled or model is None or self._summariser is not None:
            return
        self._summariser = MemorySummariser.from_config(self.config, self.workspace, model)
        if self._share(self._summariser.files) is not None and self._store is not None:
            self._summariser.keep_pending_in(self._store)  # any replica runs what is left
        self._summariser.resume()  # what an earlier process left unfinished
        consolidator = self.consolidator(model)
        self._scheduler = MemoryScheduler.for_consolidation(
            consolidator, self.config.memory.consolidation_cron
        )

    def consolidator(self, model: MemoryModel | None = None) -> MemoryConsolidator:
        """A consolidator of this workspace's memory (in its shared store, if any)."""
        consolidator = MemoryConsolidator.from_config(self.config, self.workspace, model)
        self._share(consolidator.files)
        return consolidator

    def _share(self, files: MemoryFiles) -> SharedMemory | None:
        """Give ``files`` the file store, and put them in the shared store (when there is
        one)."""
        self._wired.add(files)
        if self._file_store is not None:
            files.file_store = self._file_store
        if self._store is None or not self.enabled:
            return None
        shared = SharedMemory.of(self._store, files)
        files.shared = shared
        return shared

    async def copy_shared(self) -> None:
        """Bring the local copies of MEMORY.md and the logs up to date (a shared store)."""
        if self.shared is not None:
            await self.shared.refresh_logs()
            await self._pull_memory()
        if self._cleared is not None:
            await self._cleared.refresh()

    async def _pull_memory(self) -> None:
        if self.shared is None:
            return
        try:
            await self.shared.pull()
        except MemoryFileError as error:  # said once per failure, not at every step
            if str(error) != self._pull_failure:
                logger.warning("copaw-context: MEMORY.md not brought up to date: %s", error)
            self._pull_failure = str(error)
        else:
            self._pull_failure = None

    def on_compaction(self, record: CompactionRecord) -> Awaitable[None] | None:
        """Compaction listener: the summariser records what is worth keeping, in the
        background (the reply is not delayed); the recall index takes in the new archive lines.

        The summary a ``/clear`` or ``/new`` removes is kept first: the awaitable returned
        then appends it to ``<dialog_path>/summaries/`` (:mod:`.memory.cleared`)."""
        self.closed = False  # a summary may start: close() must run again to wait for it
        if self._summariser is not None:
            self._summariser.on_compaction(record)
        if record.trigger in ("clear", "new") and record.summary:
            return self._keep_then_index(record)
        self._index_soon()
        return None

    async def _keep_then_index(self, record: CompactionRecord) -> None:
        dialog = self.config.light_context_config.dialog_path
        try:
            await keep_cleared_summary(
                record, self.workspace, dialog, shared=self._cleared, files=self._file_store
            )
        except Exception:  # the clear went through; only the copy for recall is missing
            logger.exception(
                "copaw-context: could not keep the summary /%s removed", record.trigger
            )
        self._index_soon()

    def _index_soon(self) -> None:
        if self.enabled and (self._indexing is None or self._indexing.done()):
            self._indexing = asyncio.ensure_future(self._refresh_index())

    async def _refresh_index(self) -> None:
        try:
            await self.tools.index.refresh()
        except Exception:  # a search refreshes again; nothing is lost
            logger.exception("copaw-context: could not update the recall index")

    def start(self) -> None:
        """Start the consolidation schedule in the running loop (idempotent)."""
        if self._scheduler is None or self._scheduler.running:
            return
        self.closed = False  # used after close(): open again
        try:
            self._scheduler.start()
        except RuntimeError:
            logger.debug("copaw-context: no running loop; memory consolidation not scheduled")

    async def prompt_block(self, window_tokens: int | None = None) -> str:
        """MEMORY.md for the system prompt, bounded (``""`` when there is nothing): by
        ``memory_prompt_max_bytes``, and for a small window by about a tenth of it, so that
        the fixed parts of the prompt leave room for the conversation."""
        if not self.enabled:
            return ""
        await self._pull_memory()  # another replica's change, with a shared store
        path = self.tools.files.memory_path()
        limit = memory_prompt_limit(self.config, window_tokens)
        try:
            info = path.stat()
            key = (str(path), info.st_mtime_ns, info.st_size, limit)
        except OSError:
            return ""  # no MEMORY.md yet
        if self._prompt is not None and self._prompt[0] == key:
            return self._prompt[1]  # unchanged since the last step: no read
        try:
            text = await self.tools.files.render_for_prompt(limit)
        except Exception:
            logger.exception("copaw-context: could not read MEMORY.md for the system prompt")
            return ""
        block = (
            _PROMPT_TITLE[self.config.light_context_config.language] + text if text.strip() else ""
        )
        self._prompt = (key, block)
        return block

    @property
    def pending(self) -> int:
        """Memory summaries still running (lost if the process exits before :meth:`close`)."""
        return self._summariser.pending if self._summariser is not None else 0

    async def close(self) -> None:
        """Stop the schedule and let the summariser finish its jobs, waiting at most
        ``memory.close_timeout_seconds`` for them (the rest run at the next start)."""
        self.closed = True
        if self._scheduler is not None:
            await self._scheduler.stop()
        if self._indexing is not None:
            await asyncio.shield(self._indexing)
        if self._summariser is not None:
            wait = self.config.memory.close_timeout_seconds
            await asyncio.shield(self._summariser.close(wait_seconds=wait))
