"""The events of one compaction: started, fitted instead, would not free, fixed parts too large."""

from __future__ import annotations

from typing import Any

from copaw_context.core.context.report import TokenReport
from copaw_context.core.context.state import SessionState
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.events import NOT_FREEING, ContextEvent
from copaw_context.core.host.protocol import HostSession

__all__ = ["event_base", "fitted_event", "not_freeing_event", "started_event", "warn_fixed_parts"]


async def started_event(
    ctx: StepContext,
    host: HostSession,
    report: TokenReport,
    base: dict[str, Any],
    compacted: int,
    kept: int,
) -> None:
    """Say what is about to be compacted (``show_status``: QwenPaw's "started" line)."""
    event = ContextEvent(
        kind="compaction_started",
        tokens_before=report.total,
        messages_compacted=compacted,
        messages_kept=kept,
        **base,
    )
    await ctx.emit(event, host)


async def fitted_event(
    ctx: StepContext,
    host: HostSession,
    before: TokenReport,
    after: TokenReport,
    base: dict[str, Any],
    started: float,
) -> ContextEvent:
    event = ContextEvent(
        kind="truncation",
        tokens_before=before.total,
        tokens_after=after.total,
        messages_kept=after.message_count,
        duration_seconds=ctx.now() - started,
        message="nothing safe to compact; results the model has not seen yet cut to fit",
        **base,
    )
    await ctx.emit(event, host)
    return event


def event_base(host: HostSession, report: TokenReport, trigger: str) -> dict[str, Any]:
    return {
        "agent_name": host.agent_name,
        "session_id": host.session_id,
        "threshold_tokens": report.threshold,
        "window_tokens": report.window,
        "trigger": trigger,
    }


async def warn_fixed_parts(
    ctx: StepContext, state: SessionState, report: TokenReport, base: dict[str, Any]
) -> None:
    unsummarised = (report.system + report.tools) * report.factor
    if unsummarised >= report.window and state.warn_once("fixed_over_window"):
        await ctx.emit(
            ContextEvent(
                kind="warning",
                tokens_before=report.total,
                message=(
                    f"system prompt ({report.system}) and tool schemas ({report.tools}) alone "
                    f"exceed the {report.window}-token window: no model input can fit it; raise "
                    "max_input_length, shorten the system prompt or remove tools (with memory "
                    "on, its tools are part of the schemas: memory.enabled false drops them)"
                ),
                **base,
            )
        )
    if report.fixed * report.factor < report.threshold or not state.warn_once("fixed_parts"):
        return
    await ctx.emit(
        ContextEvent(
            kind="warning",
            tokens_before=report.total,
            message=(
                f"system prompt ({report.system}), summary ({report.summary}) and tool schemas "
                f"({report.tools}) alone reach the compaction threshold ({report.threshold}); "
                "compacting everything safe and truncating tool results"
            ),
            **base,
        )
    )


async def not_freeing_event(
    ctx: StepContext,
    host: HostSession,
    report: TokenReport,
    base: dict[str, Any],
    started: float,
    *,
    replaced: int,
    added: int,
) -> ContextEvent:
    """Nothing changes: the new summary and its guide would take as much as what they replace."""
    event = ContextEvent(
        kind="compaction_failed",
        tokens_before=report.total,
        tokens_after=report.total,
        messages_kept=report.message_count,
        duration_seconds=ctx.now() - started,
        message=(
            f"{NOT_FREEING}: the new summary and its guide take {added} "
            f"tokens, what they would replace {replaced}; the context is unchanged and nothing "
            "was archived"
        ),
        **base,
    )
    await ctx.emit(event, host)
    return event
