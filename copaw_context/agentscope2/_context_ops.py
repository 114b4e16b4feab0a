"""The compaction step and the chat commands, run by ``MemoryCompactionHook``."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from agentscope.message import Msg, TextBlock, ToolCallBlock

from copaw_context.agentscope2._commands import ChatCommand, format_compact_reply
from copaw_context.agentscope2._compactor import SummaryCompactor
from copaw_context.agentscope2._pruning import offload_and_cut
from copaw_context.core.errors import ArchiveError
from copaw_context.core.events import ContextEvent
from copaw_context.core.prompts import render_summary_message, split_summary_message
from copaw_context.core.transcript import TranscriptMessage
from copaw_context.core.truncation import (
    parse_truncation_notice,
)

if TYPE_CHECKING:
    from copaw_context.agentscope2._hook import MemoryCompactionHook

__all__ = ["TokenReport", "compact", "run_command", "token_report"]

logger = logging.getLogger("copaw_context")

_STATE_KEY = "copaw_context"


@dataclass(frozen=True)
class TokenReport:
    """Tokens the model would receive now, by part, against threshold and window."""

    system: int
    summary: int
    tools: int
    messages: int
    threshold: int
    reserve: int
    window: int
    window_source: str  # "running.max_input_length" | "model.context_size"
    counter: str
    calibration: float

    @property
    def fixed(self) -> int:
        """System prompt + summary + tool schemas."""
        return self.system + self.summary + self.tools

    @property
    def total(self) -> int:
        """Everything, calibrated by the provider's reported usage."""
        return round((self.fixed + self.messages) * self.calibration)


def _state(agent: Any) -> dict[str, Any]:
    entry: dict[str, Any] = agent.state.middle_context.setdefault(_STATE_KEY, {})
    return entry


def _summary_text(agent: Any) -> str:
    summary = agent.state.summary
    if isinstance(summary, str):
        return summary
    return "\n".join(b.text for b in summary if isinstance(b, TextBlock))


def previous_summary(agent: Any) -> str:
    """The bare structured summary (without the dialog guide), for merging."""
    stored = _state(agent).get("summary")
    if isinstance(stored, str):
        return stored
    text = _summary_text(agent)
    return split_summary_message(text) if text else ""


async def token_report(hook: MemoryCompactionHook, agent: Any) -> TokenReport:
    """Count what the model would receive for the agent's current state."""
    handler = await hook.handler_for(agent)
    # Private but unavoidable: the exact system prompt and tool schemas the model gets.
    # Pinned by tests/test_agentscope_pins.py.
    model_input = await agent._prepare_model_input()
    messages: list[Msg] = model_input["messages"]
    system = handler.count_message(messages[0]) if messages else 0
    summary = handler.count_message(messages[1]) if agent.state.summary and len(messages) > 1 else 0
    tools = handler.count_tools(model_input.get("tools") or [])
    context = sum(handler.count_message(m) for m in agent.state.context)
    if hook.config.max_input_length_is_set:
        window, source = hook.config.max_input_length, "running.max_input_length"
    else:
        window, source = int(agent.model.context_size), "model.context_size"
    return TokenReport(
        system=system,
        summary=summary,
        tools=tools,
        messages=context,
        threshold=hook.config.compact_threshold_tokens(window),
        reserve=hook.config.reserve_tokens(window),
        window=window,
        window_source=source,
        counter=handler.counter.name,
        # Only approximate counters are calibrated (the byte estimate, the auto fallback for an
        # unknown model family): an exact tokenizer must not be skewed by a proxy's "usage".
        calibration=hook.calibration.factor if hook.calibrates(agent) else 1.0,
    )


async def compact(
    hook: MemoryCompactionHook, agent: Any, *, force: bool, note: str
) -> ContextEvent | None:
    """Check the context and compact it when over the threshold (or when forced)."""
    started = hook.now()
    report = await token_report(hook, agent)
    factor = report.calibration
    state = _state(agent)
    light = hook.config.light_context_config
    base = {
        "agent_name": agent.name,
        "session_id": str(agent.state.session_id),
        "threshold_tokens": report.threshold,
        "window_tokens": report.window,
        "trigger": "command" if force else "auto",
    }
    if not force and report.total <= report.threshold:
        return None
    if report.fixed * factor >= report.threshold and not state.get("warned_fixed"):
        state["warned_fixed"] = True
        await hook.emit(
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
    handler = await hook.handler_for(agent)
    # A large system prompt or tool list shrinks the kept tail, so that what stays (with the
    # new summary, at most its budget) fits under the threshold instead of compacting again
    # at every step.
    summary_room = _summary_budget_chars(report.window) // 2  # ~2 chars a token: CJK-safe
    others = round((report.fixed - report.summary) * factor)
    reserve = min(report.reserve, max(0, report.threshold - others - summary_room))
    check = handler.context_check(
        agent.state.context,
        threshold_tokens=int(report.threshold / factor),
        reserve_tokens=int(reserve / factor),
        fixed_tokens=report.fixed,
        force=force,
    )
    if not check.to_compact:
        return await _truncate_instead(hook, agent, report, base, force, started)

    margin = int(light.recompact_growth_ratio * report.window)
    guard = state.get("guard_total")
    use_llm = force or guard is None or report.total >= int(guard) + margin
    include_thinking = light.context_compact_config.compact_with_thinking_block
    transcript = await _with_saved_tails(
        hook, handler.to_transcript(check.to_compact, include_thinking=include_thinking)
    )
    compactor = SummaryCompactor(
        mode=light.compactor if use_llm else "extractive",
        counter=handler.counter,
        language=light.language,
        timeout_seconds=light.compactor_timeout_seconds,
        retries=light.compactor_retries,
        retry_delay=hook.compactor_retry_delay,
        include_thinking=include_thinking,
        max_summary_chars=_summary_budget_chars(report.window),
    )
    result = await compactor.summarise(
        transcript,
        previous_summary=previous_summary(agent),
        model=hook.compactor_model or agent.model,
        extra_instruction=note,
        # The agent's own model serves a window of `report.window` here, whatever its
        # nominal context_size says.
        window_tokens=None if hook.compactor_model else report.window,
    )
    archive = hook.archive_for(agent)
    kept = check.to_keep

    async def archive_then_apply() -> list[tuple[str, int]]:
        """Archive (fsynced) first; only then do the messages leave the context."""
        await archive.append(
            [m.model_dump(mode="json") for m in check.to_compact],
            [m.created_at for m in check.to_compact],
        )
        files = await archive.list_files()
        # The newest files are where to look first; older ones sit beside them.
        guide = [(_relative(hook, f.path), f.lines) for f in files[-_GUIDE_FILES:]]
        agent.state.summary = render_summary_message(result.summary, guide, language=light.language)
        agent.state.context = kept
        state["summary"] = result.summary
        return guide

    # Like AgentScope's own compaction: an interruption must not land between the archive
    # write and the context update, or the same messages would be archived twice.
    apply_task = asyncio.create_task(archive_then_apply())
    try:
        guide = await asyncio.shield(apply_task)
    except asyncio.CancelledError:
        await apply_task
        raise
    except ArchiveError as exc:
        state["guard_total"] = report.total
        event = ContextEvent(
            kind="compaction_failed",
            tokens_before=report.total,
            tokens_after=report.total,
            duration_seconds=hook.now() - started,
            message=f"dialog archive not written, nothing removed: {exc}",
            **base,
        )
        await hook.emit(event)
        return event
    if check.latest_request_index is not None:
        await _truncate_request(hook, kept[check.latest_request_index], report.reserve)
    await _clean_read_cache(agent, kept)
    hook.stats["compactions"] += 1
    after = await token_report(hook, agent)
    if after.total > report.threshold - margin:
        state["guard_total"] = after.total  # not enough room freed: no LLM storm next steps
    else:
        state.pop("guard_total", None)
    event = ContextEvent(
        kind="compaction",
        tokens_before=report.total,
        tokens_after=after.total,
        messages_compacted=len(check.to_compact),
        messages_kept=len(kept),
        duration_seconds=hook.now() - started,
        method=result.method,
        fallback_reason=result.fallback_reason if use_llm else "storm guard: extractive",
        archive_files=tuple(p for p, _ in guide),
        **base,
    )
    await hook.emit(event)
    return event


_TAIL_BYTES = 3000
_GUIDE_FILES = 7


async def _with_saved_tails(
    hook: MemoryCompactionHook, transcript: list[TranscriptMessage]
) -> list[TranscriptMessage]:
    """Show the compactor the END of each offloaded tool output, not only its head.

    The excerpt left in the context is the head of the output; build logs and test runs
    print their errors last, and those exact lines belong in the summary.
    """
    enriched: list[TranscriptMessage] = []
    for message in transcript:
        parts = list(message.parts)
        for index, part in enumerate(parts):
            parsed = parse_truncation_notice(part.text) if part.kind == "tool_result" else None
            if parsed is None or not parsed[1].file_path:
                continue
            saved = Path(parsed[1].file_path)
            saved = saved if saved.is_absolute() else hook.workspace / saved
            tail = await hook.store.read_tail(saved, _TAIL_BYTES)
            if tail and tail.strip() and tail not in parsed[0]:
                text = (
                    f"{part.text}\n[last lines of the saved output {parsed[1].file_path}]\n{tail}"
                )
                parts[index] = replace(part, text=text)
        enriched.append(replace(message, parts=tuple(parts)))
    return enriched


async def _truncate_instead(
    hook: MemoryCompactionHook,
    agent: Any,
    report: TokenReport,
    base: dict[str, Any],
    force: bool,
    started: float,
) -> ContextEvent | None:
    """Nothing is safe to compact: cut tool results (and the request) instead."""
    if force and report.total <= report.threshold:
        return None
    pruning = hook.config.light_context_config.tool_result_pruning_config
    stats = await hook.pruner.prune_all(agent.state.context, pruning.pruning_old_msg_max_bytes)
    for msg in reversed(agent.state.context):
        if msg.role == "user":
            await _truncate_request(hook, msg, report.reserve)
            break
    after = await token_report(hook, agent)
    if stats.truncated == 0 and after.total >= report.total:
        return None
    event = ContextEvent(
        kind="truncation",
        tokens_before=report.total,
        tokens_after=after.total,
        messages_kept=len(agent.state.context),
        duration_seconds=hook.now() - started,
        message=f"nothing safe to compact; {stats.truncated} tool result(s) cut",
        **base,
    )
    await hook.emit(event)
    return event


async def _clean_read_cache(agent: Any, kept: list[Msg]) -> None:
    """Forget AgentScope ``Read`` caches whose Read result left the context (as the built-in)."""
    reserved: set[str] = set()
    for msg in kept:
        for block in msg.content:
            if isinstance(block, ToolCallBlock) and block.name == "Read":
                try:
                    path = json.loads(block.input).get("file_path")
                except (ValueError, AttributeError):
                    continue
                if isinstance(path, str):
                    reserved.add(path)
    try:
        await agent.state.tool_context.clean_file_cache(reserved_file_paths=reserved)
    except Exception:
        logger.exception("copaw-context: could not clean the Read cache")


async def _truncate_request(hook: MemoryCompactionHook, msg: Msg, reserve_tokens: int) -> None:
    """Cut an oversized user request in place.

    Its full text is saved first under ``dialog/requests/``, which TTL cleanup never touches:
    the archived copy of the request will be the cut one.
    """
    max_bytes = max(2048, reserve_tokens * 3)
    for block in msg.content:
        if isinstance(block, TextBlock) and len(block.text.encode("utf-8", "replace")) > max_bytes:
            block.text, _ = await offload_and_cut(
                hook.request_store, block.text, max_bytes, hook.workspace
            )


def _summary_budget_chars(window: int) -> int:
    """About 8% of the window (in characters), so the summary never crowds out the context."""
    return max(2000, min(16000, int(window * 0.08 * 3)))


def _relative(hook: MemoryCompactionHook, path: Any) -> str:
    try:
        return str(path.relative_to(hook.workspace))
    except ValueError:
        return str(path)


async def run_command(hook: MemoryCompactionHook, agent: Any, command: ChatCommand) -> str:
    """Execute a chat command and return the reply text."""
    if command.name == "context":
        return _format_context(await token_report(hook, agent), agent)
    if command.name in ("clear", "new"):
        return await _clear(hook, agent, new_session=command.name == "new")
    before = await token_report(hook, agent)
    if not agent.state.context:
        return "**No messages to compact.** The context is empty; the summary is unchanged."
    event = await compact(hook, agent, force=True, note=command.argument)
    if event is not None and event.kind == "truncation":
        return (
            "**Nothing safe to compact.** Everything left is the latest request, pinned or a "
            f"pending tool call, so it was cut instead: {event.message}; tokens "
            f"{event.tokens_before} -> {event.tokens_after}. The summary is unchanged."
        )
    if event is None:
        return (
            "**No messages to compact.** Everything in the context is the latest request, "
            "pinned or a pending tool call; the summary is unchanged."
        )
    if event.kind == "compaction_failed":
        return f"**Compact Failed!** {event.message}. The previous summary is kept."
    return format_compact_reply(
        compacted=event.messages_compacted,
        tokens_before=before.total,
        tokens_after=event.tokens_after,
        window=before.window,
        summary=previous_summary(agent),
        fallback_reason=event.fallback_reason,
    )


def _format_context(report: TokenReport, agent: Any) -> str:
    return "\n".join(
        [
            "**Context usage**",
            "",
            f"- System prompt: {report.system} tokens",
            f"- Summary: {report.summary} tokens",
            f"- Messages ({len(agent.state.context)}): {report.messages} tokens",
            f"- Tool schemas: {report.tools} tokens",
            f"- Total: {report.total} tokens "
            f"(calibration x{report.calibration:.2f}, counter {report.counter})",
            f"- Compaction threshold: {report.threshold} tokens; "
            f"reserve for recent messages: {report.reserve}",
            f"- Window: {report.window} tokens (from {report.window_source})",
        ]
    )


async def _clear(hook: MemoryCompactionHook, agent: Any, *, new_session: bool) -> str:
    if agent.state.has_awaiting_tool_calls(agent.name):
        return (
            "**Not cleared.** A tool call is waiting for your confirmation (or an external "
            "result); answer or interrupt it first, then clear."
        )
    context = list(agent.state.context)
    if context:
        archive = hook.archive_for(agent)
        try:
            await archive.append(
                [m.model_dump(mode="json") for m in context], [m.created_at for m in context]
            )
        except ArchiveError as exc:
            return (
                f"**Clear Failed!** The dialog archive could not be written ({exc}); "
                "nothing was removed."
            )
    agent.state.context = []
    agent.state.summary = ""
    _state(agent).clear()
    where = f" to {hook.config.light_context_config.dialog_path}/" if context else ""
    if new_session:
        agent.state.session_id = uuid4().hex
        return (
            f"**New session started.** {len(context)} message(s) archived{where}; "
            "context and summary cleared."
        )
    return f"**Context cleared.** {len(context)} message(s) archived{where}; summary cleared."
