"""``StepContext``: what every pipeline step shares, and nothing that is a step.

One per engine (so per workspace): the settings, the workspace's stores, the token meters,
the event sink, the clock and the compaction listeners, plus the per-agent pieces a step
reaches through the host (its saved state, its ledger, the archive of its session) and the
one count every step trusts (:meth:`StepContext.report`). It imports no step, so a step
imports it without a circle.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from copaw_context.core.archive.mirror import ArchiveMirror
from copaw_context.core.archive.shared import SharedArchive
from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.ledger import BLOCK_OVERHEAD_TOKENS, MESSAGE_OVERHEAD_TOKENS, Ledger
from copaw_context.core.context.report import Limits, TokenReport
from copaw_context.core.context.state import SessionState
from copaw_context.core.context.status import show_status
from copaw_context.core.errors import ConfigError
from copaw_context.core.events import CompactionRecord, ContextEvent, EventCallback, emit_event
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.memory.service import MemoryService
from copaw_context.core.planning.pair_repair import SYNTHETIC_RESULT_TOKENS
from copaw_context.core.store.files import FileStore
from copaw_context.core.tokens import counter_in_use_is_exact, make_token_counter_async
from copaw_context.core.tokens.meter import TokenMeter
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.toolresults.policy import ToolResultPruning
from copaw_context.core.toolresults.store_blobs import StoreBlobs, blobs_for

__all__ = ["FLOOR_BYTES_PER_TOKEN", "CompactionListener", "EngineScratch", "StepContext"]

logger = logging.getLogger("copaw_context")

CompactionListener = Callable[[CompactionRecord], Awaitable[None] | None]
"""Called after every compaction (and ``/clear``, ``/new``) with what left the context."""

FLOOR_BYTES_PER_TOKEN = 5  # no tokenizer averages more UTF-8 bytes per token on real input


@dataclass(slots=True)
class EngineScratch:
    """The engine's per-agent cache (in ``host.scratch``; never saved)."""

    ledger: Ledger = field(default_factory=Ledger)
    pending_tried: float | None = None
    """When writing the pending archive buffer last failed (the clock's time)."""


_SCRATCH_KEY = "copaw_context.engine"


def _store_blobs(config: RunningConfig, workspace: Path) -> StoreBlobs | None:
    """The offload's blobs in the configured store (opened on first use), ``None`` for the
    files; an invalid store setting is said (a warning) and the files are used."""
    try:
        return blobs_for(config, workspace)
    except ConfigError as error:
        logger.warning("copaw-context: %s; the workspace's files are used", error)
        return None


class StepContext:
    """The settings, stores, meters, events and per-agent state the steps of one engine share."""

    def __init__(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        on_event: EventCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.settings = config.settings()
        """The resolved values the steps read (``core.config_settings.Settings``)."""
        self.workspace = workspace
        self.on_event = on_event
        self.now = clock
        pruning = config.light_context_config.tool_result_pruning_config
        files = FileStore(workspace)
        self.store = OffloadStore(
            workspace / pruning.tool_results_cache,
            pruning.offload_retention_days,
            workspace=workspace,
            manifest_retention_days=pruning.offload_manifest_retention_days,
            files=files,
        )
        self.dialog_dir = workspace / self.settings.dialog_path
        # Full texts of oversized user requests: kept with the archive, never TTL-cleaned.
        self.request_store = OffloadStore(
            self.dialog_dir / "requests", retention_days=36500, workspace=workspace, files=files
        )
        self.pruning = ToolResultPruning(pruning, self.store, workspace)
        self.blobs = self.store.blobs = self.request_store.blobs = _store_blobs(config, workspace)
        """The saved outputs' and requests' blobs in a configured workspace store (``None``:
        the files)."""
        self.mirror = ArchiveMirror.of(self.blobs, self.dialog_dir, workspace)
        """The local copy of the store's archive (``None``: the archive is the files)."""
        self._workspace_store = files
        # Seconds before the first retry of a compactor call that raised; doubles each time.
        self.compactor_retry_delay = 0.5
        self.memory = MemoryService(config, workspace, store=self.blobs, files=files)
        if self.blobs is not None:  # recall reads files: copy the store's first
            self.memory.tools.index.before_read = self.copy_shared
        self.listeners: list[CompactionListener] = [self.memory.on_compaction]
        self._meters: dict[tuple[str, str], TokenMeter] = {}

    @property
    def workspace_store(self) -> FileStore:
        """The workspace's file store (``core/store``, issue 20): the steps move onto it one
        at a time. Stage 1's offload and the request cut (``put_blob``; the check that a cut
        is ours: ``open_blob``), ``read_file`` on a saved result
        (:class:`~copaw_context.core.tools.read_tool.ReadFileTool` from the hook:
        ``open_blob``), the compactor's tails and the offload cleanup (``expire_blobs``), the
        dialog archive (:meth:`archive`: the write-ahead of a compaction,
        ``FlushPendingArchive``, ``/clear`` and ``/new``, through ``append``; the day files
        and line counts the summary's guide cites, through ``line_counts``) and the memory
        files (MEMORY.md, the daily logs, the consolidation record: ``get_document``,
        ``put_document``, ``append_text``) reach the files through it; with a PostgreSQL DSN
        they reach the database through :attr:`blobs` first (this store when it is down), the
        archive through :attr:`mirror` (its local copy listed through this store), the memory
        through its shared store. Setting it (a store of this workspace) gives it to both
        offload stores, to the memory's files and to every archive made after that; a
        ``read_file`` tool made after that uses it too."""
        return self._workspace_store

    @workspace_store.setter
    def workspace_store(self, store: FileStore) -> None:
        self._workspace_store = self.store.files = self.request_store.files = store
        self.memory.file_store = store

    async def copy_shared(self) -> None:
        """Bring the local copies of the shared archive and memory up to date (a shared
        store; nothing to do without one)."""
        if self.mirror is not None:
            await self.mirror.refresh()
        await self.memory.copy_shared()

    async def close_store(self) -> None:
        """Close the shared store's connections (the next use opens them again)."""
        if self.blobs is not None:
            await self.blobs.close()

    @property
    def is_light(self) -> bool:
        """Whether this engine manages the context (``context_manager_backend == "light"``)."""
        return self.config.context_manager_backend == "light"

    # ---------------------------------------------------------------- per agent
    def state(self, host: HostSession) -> SessionState:
        """The host's engine state; overflow figures are those of the model of this call
        (a host without ``model_key``, as ``SessionBase`` has, keeps one set)."""
        return SessionState(
            host.state,
            model_key=host.model_key,
            primary_key=host.primary_model_key,
        )

    def scratch(self, host: HostSession) -> EngineScratch:
        """The engine's cache for the host's agent (made when missing)."""
        scratch = host.scratch.get(_SCRATCH_KEY)
        if not isinstance(scratch, EngineScratch):
            scratch = host.scratch[_SCRATCH_KEY] = EngineScratch()
        return scratch

    def ledger(self, host: HostSession) -> Ledger:
        """The host's ledger (rebuilt when missing)."""
        return self.scratch(host).ledger

    async def meter(self, host: HostSession) -> TokenMeter:
        """The token meter for the host's model (the tokenizer loads off the event loop)."""
        key = (self.settings.token_counter, host.model_name)
        meter = self._meters.get(key)
        if meter is None:
            counter = await make_token_counter_async(
                self.settings.token_counter,
                model_name=host.model_name,
                estimate_divisor=self.settings.token_count_estimate_divisor,
            )
            meter = self._meters[key] = TokenMeter(counter)
        return meter

    async def sync(self, host: HostSession) -> tuple[Ledger, TokenMeter]:
        """The ledger, brought up to date with the host's context."""
        meter = await self.meter(host)
        ledger = self.ledger(host)
        ledger.sync(host, meter, self.pruning.is_exempt)
        return ledger, meter

    def calibrates(self, host: HostSession, meter: TokenMeter) -> bool:
        """Whether reported usage corrects our count: only for approximate counters (the byte
        estimate, also as the fallback of a vocabulary that failed to load, and ``auto`` for a
        model family we have no vocabulary for)."""
        return not counter_in_use_is_exact(
            meter.counter, self.settings.token_counter, host.model_name
        )

    def archive(self, host: HostSession) -> DialogArchive | SharedArchive:
        """The dialog archive writer for the host's current session: its day files appended
        through :attr:`workspace_store` (``append``), or in the shared store when one is
        configured."""
        local = DialogArchive(
            self.dialog_dir,
            session_id=host.session_id,
            agent_name=host.agent_name,
            workspace=self.workspace,
            files=self._workspace_store,
        )
        return local if self.mirror is None else SharedArchive(local, self.mirror)

    def relative(self, path: Path) -> str:
        """``path`` as the agent sees it: relative to the workspace when inside it."""
        try:
            return str(path.relative_to(self.workspace))
        except ValueError:
            return str(path)

    # ---------------------------------------------------------------- the count
    async def report(self, host: HostSession, limits: Limits | None = None) -> TokenReport:
        """Count what the model would receive for the host's current state."""
        ledger, meter = await self.sync(host)
        fixed = await host.fixed_parts()
        system, size = meter.fixed(fixed.system_prompt)
        summary, summary_size = meter.fixed(fixed.summary_message)
        tools, tools_size = meter.fixed(fixed.tool_schemas)
        overhead = MESSAGE_OVERHEAD_TOKENS + BLOCK_OVERHEAD_TOKENS
        system += overhead
        if fixed.summary_message:
            summary += overhead
        messages, message_size = ledger.total()
        messages += ledger.unanswered_calls() * SYNTHETIC_RESULT_TOKENS  # answered in the input
        window = host.window()
        if limits is None:
            limits = Limits(
                self.config.compact_threshold_tokens(window.tokens),
                self.config.reserve_tokens(window.tokens),
            )
        total_bytes = size + summary_size + tools_size + message_size
        return TokenReport(
            system=system,
            summary=summary,
            tools=tools,
            messages=messages,
            threshold=limits.threshold,
            reserve=limits.reserve,
            window=window.tokens,
            window_source=window.source,
            counter=meter.counter.name,
            calibration=self._factor(host, self.calibrates(host, meter)),
            floor=math.ceil(total_bytes / FLOOR_BYTES_PER_TOKEN),
            message_count=len(ledger.messages),
        )

    def _factor(self, host: HostSession, calibrated: bool) -> float:
        """Usage calibration (approximate counters only) and what overflows taught (any)."""
        state = self.state(host)
        usage = state.calibration.factor if calibrated else 1.0
        return max(usage, state.overflow_factor)

    # ---------------------------------------------------------------- telling others
    async def emit(self, event: ContextEvent, host: HostSession | None = None) -> None:
        """Send ``event`` to logging and the ``on_event`` callback; with ``show_status``, the
        host also shows the status line of an automatic compaction in the chat."""
        await emit_event(event, self.on_event)
        if host is not None and self.settings.show_status:
            await show_status(host, event)

    async def notify(self, record: CompactionRecord) -> None:
        """Hand ``record`` to every compaction listener; a failing listener is only logged."""
        for listener in self.listeners:
            try:
                result = listener(record)
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                logger.exception("copaw-context: a compaction listener failed")
