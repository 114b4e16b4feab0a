"""Tool-result pruning: stage 1 (a fresh result, before the host stores it) and stage 2
(results that became old and were seen, re-cut once to their old limit, same file).

Stage 2 runs in batches (``pruning_batch_ratio``): a re-cut changes the model input from
that result on, so a provider's prompt cache loses everything after it. The pipeline's
``prune`` step re-cuts the pending results together once they would free the batch's share of
the window, or once the input is over the compaction threshold (before the compaction's own
check, so a compaction that follows breaks the cache in the same step).

A result is settled once it is in its last form before a compaction (cut to its old limit,
or small enough): its facts for the summary (error lines, paths, outcome) are computed then,
once, so a compaction only gathers them.
"""

from __future__ import annotations

import logging
from typing import Any

from copaw_context.core.context.report import Limits
from copaw_context.core.context.step import Turn
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.events import ContextEvent
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.steps.compactor_input import result_text
from copaw_context.core.summary.result_facts import result_facts
from copaw_context.core.toolresults.policy import OutputPart, PruneStats

__all__ = ["NOTICE_TOKENS", "Pruner", "bound_stored", "prune_all"]

NOTICE_TOKENS = 80
"""About what a cut's ``<<<TRUNCATED>>>`` notice costs (an estimate of a batch's gain)."""

logger = logging.getLogger("copaw_context")


class Pruner:
    """Stage 1 on every fresh result; stage 2 as the pipeline's ``prune`` step."""

    name = "prune"

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx

    async def bound_fresh(
        self,
        host: HostSession,
        tool_name: str | None,
        tool_input: str | None,
        parts: list[OutputPart],
        meta: dict[str, Any],
    ) -> tuple[list[OutputPart], dict[str, Any]]:
        """Stage 1: a fresh tool result's parts and entry, bounded before the host stores it."""
        pruning = self.ctx.pruning
        if not pruning.enabled:
            return parts, meta
        parts, meta, stats = await pruning.bound_fresh(tool_name, tool_input, parts, meta)
        self.ctx.state(host).add_stats(truncated=stats.truncated, offloaded=stats.offloaded)
        blobs = self.ctx.blobs
        why = blobs.take_failure() if blobs is not None else None
        if why is not None:  # the full text is in the local file instead: say so
            event = ContextEvent(
                kind="warning",
                agent_name=host.agent_name,
                session_id=host.session_id,
                message=f"{why}; the tool results stay in the local files of "
                f"{self.ctx.workspace} until it is back",
            )
            await self.ctx.emit(event, host)
        return parts, meta

    async def run(self, host: HostSession, turn: Turn) -> None:
        if await self.batch_due(host, turn.limits):
            await self.prune_old(host)

    async def batch_due(self, host: HostSession, limits: Limits | None = None) -> bool:
        """Whether stage 2's pending re-cuts run now: they would free at least
        ``pruning_batch_ratio`` of the window, or the input is over the compaction threshold
        (``limits``: the host's own, as the ``compact`` step takes them)."""
        ctx = self.ctx
        if not ctx.pruning.enabled:
            return False
        freed = await self.pending_gain(host)
        if freed is None:
            return False
        if freed >= ctx.settings.pruning_batch_ratio * host.window().tokens:
            return True
        report = await ctx.report(host, limits)
        return report.total > report.threshold

    async def pending_gain(self, host: HostSession) -> int | None:
        """About how many tokens the pending re-cuts would free (None: none is pending)."""
        ctx = self.ctx
        ledger, _ = await ctx.sync(host)
        results = ledger.results()
        old = max(0, len(results) - ctx.pruning.config.pruning_recent_n)
        freed: int | None = None
        for position in range(ledger.settled, old):
            index, part = results[position]
            entry = ledger.messages[index].parts[part]
            limit = ctx.pruning.limit(recent=False, exempt=entry.exempt)
            if entry.unseen:
                continue
            if entry.pruned_to == limit:
                if position == ledger.settled:
                    ledger.settled += 1
                    self._settled(host, index, part)
                continue
            kept = entry.tokens * min(1.0, limit / max(1, entry.nbytes))
            freed = (freed or 0) + max(0, int(entry.tokens - kept) - NOTICE_TOKENS)
        return freed

    async def prune_old(self, host: HostSession) -> PruneStats:
        """Stage 2: re-cut each result outside the ``pruning_recent_n`` newest, once seen
        (every pending one now: the pipeline's step decides when, :meth:`batch_due`).

        Results already cut to their old limit are counted as settled and not looked at again.
        """
        ctx, stats = self.ctx, PruneStats()
        if not ctx.pruning.enabled:
            return stats
        ledger, _ = await ctx.sync(host)
        results = ledger.results()
        old = max(0, len(results) - ctx.pruning.config.pruning_recent_n)
        for position in range(ledger.settled, old):
            index, part = results[position]
            entry = ledger.messages[index].parts[part]
            limit = ctx.pruning.limit(recent=False, exempt=entry.exempt)
            if entry.unseen:
                continue
            if entry.pruned_to != limit:
                stats.add(await bound_stored(ctx, host, index, part, limit))
            if position == ledger.settled:
                ledger.settled += 1
                self._settled(host, index, part)
        if stats.truncated or stats.offloaded:
            ctx.state(host).add_stats(truncated=stats.truncated, offloaded=stats.offloaded)
        return stats

    def _settled(self, host: HostSession, index: int, part: int) -> None:
        """A result settled in its last form: its facts computed now, once (fail-open: a
        compaction computes what is missing)."""
        try:
            text = result_text(self.ctx, host.view(index, part).parts[0])
            if text is not None:
                result_facts(text)
        except Exception:  # never in the way of a step
            logger.debug("copaw-context: facts of a settled result not kept", exc_info=True)


async def prune_all(ctx: StepContext, host: HostSession, max_bytes: int) -> PruneStats:
    """Emergency pass: cut EVERY tool result (recent ones too) to ``max_bytes``."""
    stats = PruneStats()
    ledger, _ = await ctx.sync(host)
    for index, part in ledger.results():
        stats.add(await bound_stored(ctx, host, index, part, max_bytes, record_limit=False))
    return stats


async def bound_stored(
    ctx: StepContext,
    host: HostSession,
    index: int,
    part: int,
    limit: int,
    *,
    record_limit: bool = True,
) -> PruneStats:
    """Cut one stored tool result to ``limit`` bytes (its full text stays reachable).

    ``record_limit`` marks it as cut to its old limit, so stage 2 never looks at it again.
    """
    ledger, meter = await ctx.sync(host)
    view = host.view(index, part).parts[0]
    parts: list[OutputPart] = list(view.output)
    new_parts, meta, stats = await ctx.pruning.bound(parts, view.meta, limit)
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
