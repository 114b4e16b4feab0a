"""``ContextEngine``: the light context pipeline for any host framework.

Per reasoning step: offload TTL cleanup, stage-2 pruning of results that became old, a
token count (reusing the counts of what did not change), and, over the threshold, a
compaction (plan a pair-safe split, summarise, archive write-ahead, commit, event). Also
stage-1 truncation of fresh tool results, the model-call measure and usage calibration,
overflow recovery and the chat commands. The engine talks to the agent only through a
:class:`~copaw_context.core.host.HostSession`; it imports no host framework.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from copaw_context.core.archive import DialogArchive
from copaw_context.core.archiving import flush_pending
from copaw_context.core.commands import run_command
from copaw_context.core.compaction import compact
from copaw_context.core.config import RunningConfig
from copaw_context.core.events import CompactionRecord, ContextEvent, EventCallback, emit_event
from copaw_context.core.host import HostSession
from copaw_context.core.ledger import (
    BLOCK_OVERHEAD_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    Ledger,
    TokenMeter,
)
from copaw_context.core.memory_service import MemoryService
from copaw_context.core.offload import OffloadStore, referenced_offload_names
from copaw_context.core.pair_repair import SYNTHETIC_RESULT_TOKENS
from copaw_context.core.pruning import UNSEEN, OutputPart, PruneStats, ToolResultPruning
from copaw_context.core.recovery import guarded_call
from copaw_context.core.report import Limits, TokenReport
from copaw_context.core.session_state import SessionState
from copaw_context.core.status import show_status
from copaw_context.core.tokens import (
    UsageCalibration,
    counter_in_use_is_exact,
    make_token_counter_async,
)

__all__ = ["CompactionListener", "ContextEngine", "InputMeasure"]

logger = logging.getLogger("copaw_context")

_T = TypeVar("_T")

CompactionListener = Callable[[CompactionRecord], Awaitable[None] | None]
"""Called after every compaction (and ``/clear``, ``/new``) with what left the context."""

_FLOOR_BYTES_PER_TOKEN = 5  # no tokenizer averages more UTF-8 bytes per token on real input


@dataclass(frozen=True, slots=True)
class InputMeasure:
    """A model input as we count it: tokens and estimate bytes (bytes / 4 ~ AgentScope's
    estimate, the bound that makes a reported usage plausible or not)."""

    tokens: int
    nbytes: int


class ContextEngine:
    """Light context management for the agents of one workspace."""

    def __init__(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        on_event: EventCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.workspace = workspace
        self.on_event = on_event
        self.now = clock
        light = config.light_context_config
        pruning = light.tool_result_pruning_config
        self.store = OffloadStore(
            workspace / pruning.tool_results_cache,
            pruning.offload_retention_days,
            workspace=workspace,
            manifest_retention_days=pruning.offload_manifest_retention_days,
        )
        self.dialog_dir = workspace / light.dialog_path
        # Full texts of oversized user requests: kept with the archive, never TTL-cleaned.
        self.request_store = OffloadStore(
            self.dialog_dir / "requests", retention_days=36500, workspace=workspace
        )
        self.pruning = ToolResultPruning(pruning, self.store, workspace)
        # Seconds before the first retry of a compactor call that raised; doubles each time.
        self.compactor_retry_delay = 0.5
        self._meters: dict[tuple[str, str], TokenMeter] = {}
        self._listeners: list[CompactionListener] = []
        self.memory = MemoryService(config, workspace)
        self.add_compaction_listener(self.memory.on_compaction)

    # ------------------------------------------------------------------ basics
    @property
    def is_light(self) -> bool:
        """Whether this engine manages the context (``context_manager_backend == "light"``)."""
        return self.config.context_manager_backend == "light"

    def state(self, host: HostSession) -> SessionState:
        """The host's engine state; overflow figures are those of the model of this call
        (a host without ``model_key``, as ``SessionBase`` has, keeps one set)."""
        return SessionState(
            host.state,
            model_key=getattr(host, "model_key", None),
            primary_key=getattr(host, "primary_model_key", None),
        )

    def ledger(self, host: HostSession) -> Ledger:
        ledger = host.scratch.get("ledger")
        if not isinstance(ledger, Ledger):
            ledger = host.scratch["ledger"] = Ledger()
        return ledger

    async def meter(self, host: HostSession) -> TokenMeter:
        """The token meter for the host's model (the tokenizer loads off the event loop)."""
        light = self.config.light_context_config
        key = (light.token_counter, host.model_name)
        meter = self._meters.get(key)
        if meter is None:
            counter = await make_token_counter_async(
                light.token_counter,
                model_name=host.model_name,
                estimate_divisor=light.token_count_estimate_divisor,
            )
            meter = self._meters[key] = TokenMeter(counter)
        return meter

    def calibrates(self, host: HostSession, meter: TokenMeter) -> bool:
        """Whether reported usage corrects our count: only for approximate counters (the byte
        estimate, also as the fallback of a vocabulary that failed to load, and ``auto`` for a
        model family we have no vocabulary for)."""
        spec = self.config.light_context_config.token_counter
        return not counter_in_use_is_exact(meter.counter, spec, host.model_name)

    def archive(self, host: HostSession) -> DialogArchive:
        """The dialog archive writer for the host's current session."""
        return DialogArchive(
            self.dialog_dir,
            session_id=host.session_id,
            agent_name=host.agent_name,
            workspace=self.workspace,
        )

    def add_compaction_listener(self, listener: CompactionListener) -> None:
        """Call ``listener`` with every batch of messages that leaves the context."""
        self._listeners.append(listener)

    async def emit(self, event: ContextEvent, host: HostSession | None = None) -> None:
        """Send ``event`` to logging and the ``on_event`` callback; with ``show_status``, the
        host also shows the status line of an automatic compaction in the chat."""
        await emit_event(event, self.on_event)
        if host is not None and self.config.light_context_config.show_status:
            await show_status(host, event)

    async def notify(self, record: CompactionRecord) -> None:
        """Hand ``record`` to every compaction listener; a failing listener is only logged."""
        for listener in self._listeners:
            try:
                result = listener(record)
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                logger.exception("copaw-context: a compaction listener failed")

    async def sync(self, host: HostSession) -> tuple[Ledger, TokenMeter]:
        """The ledger, brought up to date with the host's context."""
        meter = await self.meter(host)
        ledger = self.ledger(host)
        ledger.sync(host, meter, self.pruning.is_exempt)
        return ledger, meter

    # ------------------------------------------------------------------ steps
    async def before_reasoning(
        self, host: HostSession, *, note: str = "", limits: Limits | None = None
    ) -> ContextEvent | None:
        """The pre-reasoning pipeline: TTL cleanup, stage-2 pruning, count, compaction."""
        self.attach_memory(host)
        await flush_pending(self, host)
        await self.cleanup_offloads(host)
        await self.prune_old(host)
        event = None
        if self.config.light_context_config.context_compact_config.enabled:
            event = await compact(self, host, trigger="auto", note=note, limits=limits)
        await self.record_offload_references(host)  # what pruning and compaction named
        return event

    async def bound_fresh(
        self,
        host: HostSession,
        tool_name: str | None,
        tool_input: str | None,
        parts: list[OutputPart],
        meta: dict[str, Any],
    ) -> tuple[list[OutputPart], dict[str, Any]]:
        """Stage 1: a fresh tool result's parts and entry, bounded before the host stores it."""
        if not self.pruning.enabled:
            return parts, meta
        parts, meta, stats = await self.pruning.bound_fresh(tool_name, tool_input, parts, meta)
        self.state(host).add_stats(truncated=stats.truncated, offloaded=stats.offloaded)
        return parts, meta

    async def prune_old(self, host: HostSession) -> PruneStats:
        """Stage 2: re-cut each result outside the ``pruning_recent_n`` newest, once seen.

        Results already cut to their old limit are counted as settled and not looked at again.
        """
        stats = PruneStats()
        if not self.pruning.enabled:
            return stats
        ledger, _ = await self.sync(host)
        results = ledger.results()
        old = max(0, len(results) - self.pruning.config.pruning_recent_n)
        for position in range(ledger.settled, old):
            index, part = results[position]
            entry = ledger.messages[index].parts[part]
            limit = self.pruning.limit(recent=False, exempt=entry.exempt)
            if entry.unseen:
                continue
            if entry.pruned_to != limit:
                stats.add(await self.bound_stored(host, index, part, limit))
            if position == ledger.settled:
                ledger.settled += 1
        if stats.truncated or stats.offloaded:
            self.state(host).add_stats(truncated=stats.truncated, offloaded=stats.offloaded)
        return stats

    async def prune_all(self, host: HostSession, max_bytes: int) -> PruneStats:
        """Emergency pass: cut EVERY tool result (recent ones too) to ``max_bytes``."""
        stats = PruneStats()
        ledger, meter = await self.sync(host)
        for index, part in ledger.results():
            stats.add(await self.bound_stored(host, index, part, max_bytes, record_limit=False))
        return stats

    async def bound_stored(
        self, host: HostSession, index: int, part: int, limit: int, *, record_limit: bool = True
    ) -> PruneStats:
        """Cut one stored tool result to ``limit`` bytes (its full text stays reachable).

        ``record_limit`` marks it as cut to its old limit, so stage 2 never looks at it again.
        """
        ledger, meter = await self.sync(host)
        view = host.view(index, part).parts[0]
        parts: list[OutputPart] = list(view.output)
        new_parts, meta, stats = await self.pruning.bound(parts, view.meta, limit)
        if record_limit:
            meta["pruned_to"] = limit
        if new_parts == parts:
            if meta != view.meta:
                host.set_tool_result(index, part, parts, meta)
                ledger.update_meta(index, part, host.view(index, part).parts[0])
            return stats
        host.set_tool_result(index, part, new_parts, meta)
        ledger.update_part(index, part, host.view(index, part).parts[0], meter)
        return stats

    async def model_call(self, host: HostSession) -> InputMeasure:
        """Before a model call: results become seen (stage 2 may cut them from now on), and
        the input is measured (counts are reused; only new content is tokenised)."""
        ledger, meter = await self.sync(host)
        for index, part in sorted(ledger.unseen):
            view = host.view(index, part).parts[0]
            meta = {k: v for k, v in view.meta.items() if k != UNSEEN}
            host.set_tool_result(index, part, list(view.output), meta)
            ledger.update_meta(index, part, host.view(index, part).parts[0])
        report = await self.report(host)
        self.state(host).last_prompt_tokens = report.raw
        return InputMeasure(report.raw, report.floor * _FLOOR_BYTES_PER_TOKEN)

    async def observe_usage(self, host: HostSession, measure: InputMeasure, reported: int) -> None:
        """Calibrate an approximate counter with the input tokens the provider reported.

        A report outside the plausible band around a bytes / 4 estimate is not a full prompt
        count (partial streaming usage, cached tokens reported apart, a proxy) and is ignored.
        """
        meter = await self.meter(host)
        if not self.calibrates(host, meter):
            return
        state = self.state(host)
        calibration = state.calibration
        byte_estimate = math.ceil(measure.nbytes / 4)
        if calibration.observe(measure.tokens, reported, byte_estimate=byte_estimate):
            state.calibration = calibration
        elif state.warn_once("implausible_usage"):
            logger.warning(
                "copaw-context: ignoring reported usage of %d input tokens for an input of about "
                "%d (UTF-8 bytes / 4): outside %.1fx-%.1fx, so not a full prompt count (partial "
                "streaming usage, cached tokens reported apart, or a proxy); calibration keeps "
                "x%.2f (logged once per agent)",
                reported,
                byte_estimate,
                UsageCalibration.PLAUSIBLE_LOW,
                UsageCalibration.PLAUSIBLE_HIGH,
                calibration.factor,
            )

    async def guarded_call(
        self,
        host: HostSession,
        send: Callable[[], Awaitable[_T]],
        resend: Callable[[], Awaitable[_T]],
    ) -> _T:
        """Make a model call; when the provider rejects the input as too long, compact harder
        and make it once more with ``resend`` (see :func:`~copaw_context.core.recovery.
        guarded_call`)."""
        return await guarded_call(self, host, send, resend)

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
        calibrated = self.calibrates(host, meter)
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
            calibration=self._factor(host, calibrated),
            floor=math.ceil(total_bytes / _FLOOR_BYTES_PER_TOKEN),
            message_count=len(ledger.messages),
        )

    def _factor(self, host: HostSession, calibrated: bool) -> float:
        """Usage calibration (approximate counters only) and what overflows taught (any)."""
        state = self.state(host)
        usage = state.calibration.factor if calibrated else 1.0
        return max(usage, state.overflow_factor)

    async def offload_names(self, host: HostSession) -> set[str]:
        """The offload file names the context (and its summary) references; the ledger
        keeps each part's names, so a step views only what changed."""
        ledger, _ = await self.sync(host)
        summaries = [host.summary_text(), self.state(host).summary or ""]
        return ledger.offload_names() | referenced_offload_names(summaries)

    async def record_offload_references(self, host: HostSession) -> set[str] | None:
        """Update the session's manifest, so other sessions' cleanups keep what it names
        (None, logged, when the context could not be read)."""
        try:
            names = await self.offload_names(host)
            await self.store.record_references(self.state(host).offload_refs_id, names)
        except Exception:
            logger.exception("copaw-context: recording the offload references failed")
            return None
        return names

    async def cleanup_offloads(self, host: HostSession) -> None:
        """The manifest, then the TTL cleanup (at most hourly) keeping what any names."""
        names = await self.record_offload_references(host)
        if names is None:
            return  # without this context's names nothing is safe to delete
        try:
            await self.store.maybe_cleanup(lambda: names)
        except Exception:
            logger.exception("copaw-context: offload cleanup failed")

    def attach_memory(self, host: HostSession) -> None:
        """Give long-term memory the host's summary model and start its schedule.

        With the extractive compactor (no model calls for context management) the memory
        summariser stays off too, unless the host has a separate summary model.
        """
        uses_llm = self.config.light_context_config.compactor == "llm"
        if uses_llm or host.has_separate_summary_model():
            self.memory.bind_model(host.compactor_model())
        self.memory.start()

    async def close(self) -> None:
        """Stop background work (early saves, the memory schedule, pending memory summaries)."""
        await self.store.drain()
        await self.memory.close()

    async def run_command(self, host: HostSession, name: str, argument: str) -> str:
        """Execute a chat command (``compact``, ``context``, ``clear``, ``new``)."""
        self.attach_memory(host)
        reply = await run_command(self, host, name, argument)
        await self.record_offload_references(host)  # /clear, /new: the files may expire
        return reply
