"""One compaction: plan a pair-safe split, summarise, archive (write-ahead), commit, event.

A storm guard keeps the LLM compactor from running again before the context grew by
``recompact_growth_ratio`` of the window after a compaction that freed too little. When
nothing is safe to compact, tool results (and an oversized latest request) are cut instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Literal

from copaw_context.core.context.ledger import Ledger
from copaw_context.core.context.report import Limits, TokenReport
from copaw_context.core.context.step import Turn
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.events import CompactionRecord, ContextEvent
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.planning.split import SplitPlan, plan_split
from copaw_context.core.steps.archive import (
    archive_and_apply,
    archive_records,
    guide_after,
    previous_summary,
    recall_tool,
)
from copaw_context.core.steps.compact_events import (
    event_base,
    fitted_event,
    not_freeing_event,
    started_event,
    warn_fixed_parts,
)
from copaw_context.core.steps.compactor_input import compacted_transcript
from copaw_context.core.steps.cut import NOTICE_BYTES, Cutter, request_cap_bytes
from copaw_context.core.summary import (
    CompactorResult,
    Summary,
    SummaryCompactor,
    render_summary_message,
)
from copaw_context.core.summary.breaker import CompactorBreaker
from copaw_context.core.summary.budget import summary_budget_chars
from copaw_context.core.tokens.meter import BLOCK_OVERHEAD_TOKENS, MESSAGE_OVERHEAD_TOKENS
from copaw_context.core.transcript import TranscriptMessage

__all__ = ["Compact", "Trigger", "compact"]

logger = logging.getLogger("copaw_context")

Trigger = Literal["auto", "command", "overflow"]


class Compact:
    """Pipeline step ``compact``: count the input; over the threshold, compact it."""

    name = "compact"

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx

    async def run(self, host: HostSession, turn: Turn) -> None:
        if self.ctx.settings.compaction_enabled:
            turn.event = await compact(self.ctx, host, note=turn.note, limits=turn.limits)


async def compact(
    ctx: StepContext,
    host: HostSession,
    *,
    trigger: Trigger = "auto",
    note: str = "",
    limits: Limits | None = None,
) -> ContextEvent | None:
    """Check the context and compact it when over the threshold.

    ``trigger="command"`` (``/compact``) compacts everything safe whatever the size;
    ``"overflow"`` (the provider rejected the input as too long) compacts down to half the
    reserve whatever our count says.
    """
    started = ctx.now()
    report = await ctx.report(host, limits)
    base = event_base(host, report, trigger)
    if trigger == "auto" and report.total <= report.threshold:
        return None
    await warn_fixed_parts(ctx, ctx.state(host), report, base)
    cap = summary_budget_chars(report.window, report.factor)  # the budget's cap (characters)
    plan, refs = await _plan(ctx, host, report, trigger, cap)
    if not plan.compact:
        fitted = await ctx.report(host, limits)  # fresh results may have been cut to fit
        if trigger == "auto" and fitted.total <= fitted.threshold < report.total:
            return await fitted_event(ctx, host, report, fitted, base, started)
        return await Cutter(ctx).instead(host, report, base, trigger, started, limits)
    ledger = ctx.ledger(host)
    to_compact = _whole(_groups(refs, plan.compact), ledger)
    to_keep = _whole(_groups(refs, plan.keep), ledger)
    await started_event(ctx, host, report, base, len(to_compact), len(to_keep))
    run = _Run(ctx, host, report, trigger, started, base)
    return await run.apply(plan, to_compact, to_keep, cap, note=note, limits=limits)


class _Run:
    """One compaction once the plan is made: summarise, archive and commit, report."""

    def __init__(
        self,
        ctx: StepContext,
        host: HostSession,
        report: TokenReport,
        trigger: Trigger,
        started: float,
        base: dict[str, Any],
    ) -> None:
        self.ctx, self.host, self.report = ctx, host, report
        self.trigger, self.started, self.base = trigger, started, base
        self.state = ctx.state(host)
        self.cutter = Cutter(ctx)
        settings = ctx.settings
        self.margin = int(settings.recompact_growth_ratio * report.window)
        guard = self.state.guard_total
        self.use_llm = trigger != "auto" or guard is None or report.total >= guard + self.margin
        self.breaker = CompactorBreaker(
            self.state,
            limit=settings.compactor_failure_limit,
            max_pause=settings.compactor_pause_max_compactions,
        )
        self.paused = settings.compactor == "llm" and not self.breaker.allows(trigger)
        if self.paused:
            self.breaker.skipped()
        self.use_llm = self.use_llm and not self.paused

    async def apply(
        self,
        plan: SplitPlan,
        to_compact: list[tuple[int, list[int] | None]],
        to_keep: list[tuple[int, list[int] | None]],
        cap: int,
        *,
        note: str,
        limits: Limits | None,
    ) -> ContextEvent:
        ctx, host = self.ctx, self.host
        transcript = await compacted_transcript(ctx, host, to_compact)
        records = archive_records(host, to_compact)
        guide = await guide_after(ctx, host, records)
        room = await _summary_room(ctx, host, self.report, plan, to_keep, guide)
        result = await self._summarise(transcript, note, cap, room)
        await self._track(result)
        summary = result.summary  # within its budget: the cap and the room
        replaced, added = await _exchange(ctx, host, self.report, to_compact, summary, guide)
        if added >= replaced and self.trigger != "command":
            # The summary would take more than it replaces (a window crowded by the system
            # prompt): keep the messages and cut instead, within the window. The context
            # stays crowded: the storm guard holds the compactor back until it grows.
            self.state.guard_total = self.report.total
            run = (host, self.report, self.base, self.trigger, self.started, limits)
            cut = await self.cutter.instead(*run, last_resort=False)
            if (await ctx.report(host, limits)).total > self.report.window:
                added = 0  # still over: compact after all, the summary cut to what fits
            elif cut is not None:
                return cut
        if added >= replaced:
            return await not_freeing_event(
                ctx,
                host,
                self.report,
                self.base,
                self.started,
                replaced=replaced,
                added=added,
            )
        guide = await archive_and_apply(ctx, host, records, to_keep, summary)
        if plan.request_over_reserve:
            await self.cutter.latest_request(host, self.report.reserve, self.report.window)
        self.state.add_stats(compactions=1)
        # the summary may take more than its room: cut what is left to cut, to the window
        after = await self.cutter.to_window(host, await ctx.report(host, limits), limits)
        crowded = after.total > self.report.threshold - self.margin
        self.state.guard_total = after.total if crowded else None
        event = ContextEvent(
            kind="compaction",
            tokens_before=self.report.total,
            tokens_after=after.total,
            messages_compacted=len(to_compact),
            messages_kept=len(to_keep),
            duration_seconds=ctx.now() - self.started,
            method=result.method,
            fallback_reason=self._fallback_reason(result),
            archive_files=tuple(p for p, _ in guide),
            summary_dropped_lines=result.dropped_lines,
            summary_dropped_by_reason=dict(result.dropped_by_reason),
            summary_budget_chars=result.budget_chars,
            compactor_calls=result.calls,
            **self.base,
        )
        await ctx.emit(event, host)
        await ctx.notify(
            CompactionRecord(
                trigger=self.trigger,
                session_id=host.session_id,
                agent_name=host.agent_name,
                messages=tuple(transcript),
                summary=summary.text(),
                archive_files=event.archive_files,
            )
        )
        return event

    def _fallback_reason(self, result: CompactorResult) -> str | None:
        if self.paused:
            return "compactor paused after repeated failures: extractive"
        return result.fallback_reason if self.use_llm else "storm guard: extractive"

    async def _track(self, result: CompactorResult) -> None:
        """Feed the breaker with the compactor's outcome; say when it pauses the compactor."""
        settings = self.ctx.settings
        if not self.use_llm or settings.compactor != "llm" or self.host.compactor_model() is None:
            return
        if result.method == "llm":
            self.breaker.succeeded()
            return
        pause = self.breaker.failed()
        if pause:
            event = ContextEvent(
                kind="compactor_paused",
                tokens_before=self.report.total,
                fallback_reason=result.fallback_reason,
                message=f"the compactor failed {self.breaker.failures} compactions in a row; "
                f"the next {pause} compactions are extractive (/compact still tries it)",
                **self.base,
            )
            await self.ctx.emit(event, self.host)

    async def _summarise(
        self, transcript: list[TranscriptMessage], note: str, cap: int, room: int
    ) -> CompactorResult:
        """The compactor's summary, within a budget of cap ``cap`` (characters) and room
        ``room`` (tokens of our counter), merged into the previous summary (parsed once)."""
        settings = self.ctx.settings
        bare = previous_summary(self.state, self.host)
        previous = await asyncio.to_thread(Summary.parse, bare, settings.language) if bare else None
        compactor = SummaryCompactor(
            mode=settings.compactor if self.use_llm else "extractive",
            counter=(await self.ctx.meter(self.host)).counter,
            language=settings.language,
            timeout_seconds=settings.compactor_timeout_seconds,
            retries=settings.compactor_retries,
            retry_delay=self.ctx.compactor_retry_delay,
            include_thinking=settings.compact_with_thinking_block,
            max_summary_chars=cap,
        )
        return await compactor.summarise(
            transcript,
            previous=previous,
            model=self.host.compactor_model(),
            extra_instruction=note,
            room_tokens=room,
        )


async def _plan(
    ctx: StepContext, host: HostSession, report: TokenReport, trigger: Trigger, cap: int
) -> tuple[SplitPlan, list[tuple[int, int]]]:
    """The split, with a kept tail that leaves room for the fixed parts and a new summary.

    A large system prompt or tool list shrinks the kept tail, so that what stays (with the
    new summary, at most its ``cap``) fits under the threshold instead of compacting again at
    every step. Results the model has not seen yet are kept (cut to fit that room first).
    """
    factor = report.factor
    summary_room = cap // 2  # ~2 chars a token
    others = round((report.fixed - report.summary) * factor)
    room = max(0, report.threshold - others - summary_room)
    reserve = min(report.reserve, room)
    if trigger == "overflow":
        reserve //= 2
    ledger = ctx.ledger(host)
    room_raw, reserve_raw = int(room / factor), int(reserve / factor)
    # Fresh results may take the room but half the reserve, which recent history keeps.
    forced = _forced_tokens(ledger, request_cap_bytes(report.reserve, report.window))
    budget = room_raw - forced - reserve_raw // 2
    await Cutter(ctx).fresh_to_budget(host, budget, report.window)
    fresh = sum(p.tokens for m in ledger.messages for p in m.parts if p.unseen)
    reserve_raw = min(reserve_raw, max(0, room_raw - forced - fresh))
    items, refs = ledger.split_items()
    plan = plan_split(
        items,
        threshold_tokens=0 if trigger == "overflow" else int(report.threshold / factor),
        reserve_tokens=reserve_raw,
        fixed_tokens=report.fixed,
        force=trigger == "command",
        index=ledger.split_index(),
    )
    return plan, refs


async def _summary_room(
    ctx: StepContext,
    host: HostSession,
    report: TokenReport,
    plan: SplitPlan,
    to_keep: Sequence[tuple[int, Sequence[int] | None]],
    guide: Sequence[tuple[str, int]],
) -> int:
    """Tokens (of our counter) the new summary may take: what the kept messages, the fixed
    parts and the summary message's frame leave under the threshold (the budget's room).

    Counted as the report will count them after the commit: the summary message costs its
    frame (guide and closing line) and a message's and a block's overhead; a message whose
    first part is compacted keeps its later parts as a message of its own, a message's
    overhead more than the plan counted for those parts. ``guide`` is the archive listing
    the message will carry (:func:`guide_after`): a long session's guide names up to seven
    day files."""
    settings = ctx.settings
    counter = (await ctx.meter(host)).counter
    split = sum(1 for _index, parts in to_keep if parts is not None and 0 not in parts)
    # the messages that stay, in our counter's units
    kept = plan.kept_tokens - report.fixed + split * MESSAGE_OVERHEAD_TOKENS
    others = report.fixed - report.summary
    frame = render_summary_message(
        "", guide, language=settings.language, recall_tool=recall_tool(ctx)
    )
    message = counter.count(frame) + MESSAGE_OVERHEAD_TOKENS + BLOCK_OVERHEAD_TOKENS
    return int(report.threshold / report.factor) - others - kept - message


async def _exchange(
    ctx: StepContext,
    host: HostSession,
    report: TokenReport,
    to_compact: Sequence[tuple[int, Sequence[int] | None]],
    summary: Summary,
    guide: Sequence[tuple[str, int]],
) -> tuple[int, int]:
    """Tokens that compacting would replace (the messages and the old summary message) and
    those it would add (the new summary with its guide), in our counter's units."""
    counter = (await ctx.meter(host)).counter
    ledger = ctx.ledger(host)
    replaced = report.summary
    for index, parts in to_compact:
        message = ledger.messages[index]
        replaced += message.tokens if parts is None else sum(message.parts[p].tokens for p in parts)
    rendered = render_summary_message(
        summary.text(), guide, language=ctx.settings.language, recall_tool=recall_tool(ctx)
    )
    return replaced, counter.count(rendered)


def _forced_tokens(ledger: Ledger, request_cap: int) -> int:
    """Tokens of what is kept whatever the plan: pinned messages and the latest request, as
    large as it will be once cut to ``request_cap`` bytes (plus its notice)."""
    latest = next(
        (m for m in reversed(ledger.messages) if m.is_request),
        None,
    )
    pinned = sum(m.tokens for m in ledger.messages if m.pinned and m is not latest)
    if latest is None:
        return pinned
    request = latest.tokens
    if latest.nbytes > request_cap + NOTICE_BYTES and not latest.pinned:
        request = min(request, -(-latest.tokens * (request_cap + NOTICE_BYTES) // latest.nbytes))
    return pinned + request


def _groups(
    refs: Sequence[tuple[int, int]], indices: Sequence[int]
) -> list[tuple[int, list[int] | None]]:
    """Plan item indices -> (message, parts) in order; ``None`` when the whole message."""
    by_message: dict[int, list[int]] = {}
    for item in indices:
        message, part = refs[item]
        by_message.setdefault(message, []).append(part)
    return [(m, None if -1 in parts else parts) for m, parts in by_message.items()]


def _whole(
    groups: list[tuple[int, list[int] | None]], ledger: Ledger
) -> list[tuple[int, list[int] | None]]:
    """Groups that hold every part of their message, marked whole (``None``)."""
    out: list[tuple[int, list[int] | None]] = []
    for message, parts in groups:
        if parts is not None and len(parts) == len(ledger.messages[message].parts):
            parts = None
        out.append((message, parts))
    return out
