"""The compaction step and the chat commands, run by ``MemoryCompactionHook``."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agentscope.message import Msg, TextBlock, ToolCallBlock

from copaw_context.agentscope2._agent_state import AgentEntry, agent_entry
from copaw_context.agentscope2._pruning import offload_and_cut
from copaw_context.agentscope2._summariser import AgentScopeSummariser
from copaw_context.core.archive import ArchivedFile
from copaw_context.core.errors import ArchiveError
from copaw_context.core.events import ContextEvent
from copaw_context.core.summary.llm import SummaryCompactor
from copaw_context.core.summary.message import render_summary_message, split_summary_message
from copaw_context.core.transcript import TranscriptMessage
from copaw_context.core.truncation import parse_truncation_notice, truncate_text_output

if TYPE_CHECKING:
    from copaw_context.agentscope2._hook import MemoryCompactionHook

__all__ = [
    "TokenReport",
    "Trigger",
    "archive_id",
    "archive_messages",
    "compact",
    "previous_summary",
    "shielded",
    "token_report",
]

logger = logging.getLogger("copaw_context")

_T = TypeVar("_T")
_FLOOR_BYTES_PER_TOKEN = 5  # no tokenizer averages more UTF-8 bytes per token on real input


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
    floor: int = 0
    """UTF-8 bytes / 5 of everything: no count (calibrated or not) is believed below it."""

    @property
    def fixed(self) -> int:
        """System prompt + summary + tool schemas."""
        return self.system + self.summary + self.tools

    @property
    def raw(self) -> int:
        """Everything, as our counter counts it."""
        return self.fixed + self.messages

    @property
    def total(self) -> int:
        """Everything, calibrated by the provider's reported usage (never below the floor)."""
        if self.calibration == 1.0:
            return self.raw  # an exact counter, or no usage seen yet
        return max(round(self.raw * self.calibration), self.floor)

    @property
    def factor(self) -> float:
        """How much one of our counted tokens weighs in ``total``."""
        return self.total / self.raw if self.raw else 1.0


def _summary_text(agent: Any) -> str:
    summary = agent.state.summary
    if isinstance(summary, str):
        return summary
    return "\n".join(b.text for b in summary if isinstance(b, TextBlock))


def previous_summary(entry: AgentEntry, agent: Any) -> str:
    """The bare structured summary (without the dialog guide), for merging."""
    stored = entry.data.get("summary")
    if isinstance(stored, str):
        return stored
    text = _summary_text(agent)
    return split_summary_message(text) if text else ""


async def token_report(
    hook: MemoryCompactionHook, agent: Any, *, context_config: Any = None
) -> TokenReport:
    """Count what the model would receive for the agent's current state.

    ``context_config`` (an AgentScope ``ContextConfig`` passed to ``compress_context``, e.g.
    by its compression tool) sets the threshold and reserve in its own terms (ratios of the
    model's ``context_size``); otherwise they come from our configuration.
    """
    handler = await hook.handler_for(agent)
    entry = await agent_entry(hook, agent)
    # Private but unavoidable: the exact system prompt and tool schemas the model gets.
    # Pinned by tests/test_agentscope_pins.py.
    model_input = await agent._prepare_model_input()
    messages: list[Msg] = model_input["messages"]
    system, size = handler.measure_message(messages[0]) if messages else (0, 0)
    summary = 0
    if agent.state.summary and len(messages) > 1:
        summary, summary_size = handler.measure_message(messages[1])
        size += summary_size
    tools, tools_size = handler.measure_tools(model_input.get("tools") or [])
    size += tools_size
    context = 0
    for msg in agent.state.context:
        tokens, msg_size = handler.measure_message(msg)
        context += tokens
        size += msg_size
    if hook.config.max_input_length_is_set:
        window, source = hook.config.max_input_length, "running.max_input_length"
    else:
        window, source = int(agent.model.context_size), "model.context_size"
    threshold = hook.config.compact_threshold_tokens(window)
    reserve = hook.config.reserve_tokens(window)
    if context_config is not None:
        threshold, reserve = _limits_from(context_config, agent, threshold, reserve)
    return TokenReport(
        system=system,
        summary=summary,
        tools=tools,
        messages=context,
        threshold=threshold,
        reserve=reserve,
        window=window,
        window_source=source,
        counter=handler.counter.name,
        # Only approximate counters are calibrated (the byte estimate, a vocabulary that
        # failed to load, the auto fallback for an unknown model family): an exact
        # tokenizer must not be skewed by a proxy's "usage".
        calibration=entry.calibration.factor if hook.calibrates(agent, handler) else 1.0,
        floor=math.ceil(size / _FLOOR_BYTES_PER_TOKEN),
    )


def _limits_from(cfg: Any, agent: Any, threshold: int, reserve: int) -> tuple[int, int]:
    """Threshold and reserve from an AgentScope ``ContextConfig`` (ratios of context_size)."""
    try:
        size = int(agent.model.context_size)
        threshold = max(1, int(float(cfg.trigger_ratio) * size))
        reserve = max(0, min(int(float(cfg.reserve_ratio) * size), threshold - 1))
    except (AttributeError, TypeError, ValueError):
        logger.warning("copaw-context: unusable context_config %r; using our own limits", cfg)
    return threshold, reserve


Trigger = Literal["auto", "command", "overflow"]


async def compact(
    hook: MemoryCompactionHook,
    agent: Any,
    *,
    trigger: Trigger = "auto",
    note: str = "",
    context_config: Any = None,
) -> ContextEvent | None:
    """Check the context and compact it when over the threshold.

    ``trigger="command"`` (``/compact``) compacts everything safe whatever the size;
    ``"overflow"`` (the provider rejected the input as too long) compacts down to half the
    reserve whatever our count says.
    """
    started = hook.now()
    report = await token_report(hook, agent, context_config=context_config)
    factor = report.factor
    entry = await agent_entry(hook, agent)
    light = hook.config.light_context_config
    base = {
        "agent_name": agent.name,
        "session_id": str(agent.state.session_id),
        "threshold_tokens": report.threshold,
        "window_tokens": report.window,
        "trigger": trigger,
    }
    if trigger == "auto" and report.total <= report.threshold:
        return None
    if report.fixed * factor >= report.threshold and entry.warn_once("fixed_parts"):
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
    if trigger == "overflow":
        reserve //= 2
    check = handler.context_check(
        agent.state.context,
        threshold_tokens=0 if trigger == "overflow" else int(report.threshold / factor),
        reserve_tokens=int(reserve / factor),
        fixed_tokens=report.fixed,
        force=trigger == "command",
    )
    if not check.to_compact:
        return await _truncate_instead(hook, agent, report, base, trigger, started)

    margin = int(light.recompact_growth_ratio * report.window)
    guard = entry.data.get("guard_total")
    use_llm = trigger != "auto" or guard is None or report.total >= int(guard) + margin
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
        previous_summary=previous_summary(entry, agent),
        model=AgentScopeSummariser(hook.compactor_model or agent.model),
        extra_instruction=note,
        # The agent's own model serves a window of `report.window` here, whatever its
        # nominal context_size says.
        window_tokens=None if hook.compactor_model else report.window,
    )
    try:
        guide = await _archive_and_apply(hook, agent, entry, check, result.summary)
    except ArchiveError as exc:
        entry.data["guard_total"] = report.total
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
    kept = check.to_keep
    if check.latest_request_index is not None:
        await _truncate_request(hook, agent, kept[check.latest_request_index], report.reserve)
    await _clean_read_cache(agent, kept)
    entry.add_stats(compactions=1)
    after = await token_report(hook, agent, context_config=context_config)
    if after.total > report.threshold - margin:
        entry.data["guard_total"] = after.total  # not enough room freed: no LLM storm next steps
    else:
        entry.data.pop("guard_total", None)
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


def archive_id(msg: Msg) -> str:
    """A stable identity of ``msg`` as archived: its id and the ids of the blocks it holds.

    A message cut in two by a compaction keeps its id in both halves; the block ids tell
    the halves apart, so each is archived exactly once.
    """
    blocks = ",".join(f"{b.type}:{b.id}" for b in msg.content)
    digest = hashlib.sha1(blocks.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    safe_id = re.sub(r"[^A-Za-z0-9._:-]", "_", str(msg.id))[:150]
    return f"{safe_id}#{digest}"


async def archive_messages(
    hook: MemoryCompactionHook, agent: Any, messages: list[Msg]
) -> list[ArchivedFile]:
    """Write ``messages`` to the dialog archive (each exactly once, fsynced)."""
    return await hook.archive_for(agent).append(
        [m.model_dump(mode="json") for m in messages],
        [m.created_at for m in messages],
        [archive_id(m) for m in messages],
    )


async def shielded(operation: Awaitable[_T]) -> _T:
    """Run ``operation`` to the end even if the caller is cancelled meanwhile.

    Like AgentScope's own compaction: an interruption must not land between the archive
    write and the context update, or the same messages would be archived twice (or lost).
    """
    task = asyncio.ensure_future(operation)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


async def _archive_and_apply(
    hook: MemoryCompactionHook, agent: Any, entry: AgentEntry, check: Any, summary: str
) -> list[tuple[str, int]]:
    """Archive (fsynced) first; only then do the messages leave the context."""
    language = hook.config.light_context_config.language

    async def archive_then_apply() -> list[tuple[str, int]]:
        written = await archive_messages(hook, agent, check.to_compact)
        # Archived: commit at once, so that nothing after this point can archive them again.
        agent.state.context = check.to_keep
        entry.data["summary"] = summary
        guide = [(_relative(hook, f.path), f.lines) for f in written]
        agent.state.summary = render_summary_message(summary, guide, language=language)
        listed = await _path_guide(hook, agent)
        if listed:
            guide = listed
            agent.state.summary = render_summary_message(summary, guide, language=language)
        return guide

    return await shielded(archive_then_apply())


async def _path_guide(hook: MemoryCompactionHook, agent: Any) -> list[tuple[str, int]]:
    """The newest archive files with their line counts; best effort (the archive is written)."""
    try:
        files = await hook.archive_for(agent).list_files()
    except Exception as exc:  # the messages are archived and applied; the guide is a nicety
        logger.warning("copaw-context: could not list the dialog archive for the guide: %s", exc)
        return []
    # The newest files are where to look first; older ones sit beside them.
    return [(_relative(hook, f.path), f.lines) for f in files[-_GUIDE_FILES:]]


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
    trigger: Trigger,
    started: float,
) -> ContextEvent | None:
    """Nothing is safe to compact: cut tool results (and the request) instead."""
    if trigger == "command" and report.total <= report.threshold:
        return None
    pruning = hook.config.light_context_config.tool_result_pruning_config
    stats = await hook.pruner.prune_all(agent.state.context, pruning.pruning_old_msg_max_bytes)
    for msg in reversed(agent.state.context):
        if msg.role == "user":
            await _truncate_request(hook, agent, msg, report.reserve)
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


async def _truncate_request(
    hook: MemoryCompactionHook, agent: Any, msg: Msg, reserve_tokens: int
) -> None:
    """Cut an oversized user request in place, never losing a byte of it.

    Its full text is saved first under ``dialog/requests/``, which TTL cleanup never touches:
    the archived copy of the request will be the cut one. A request we already cut is only
    re-cut (its full text was saved then); when saving fails, the request stays whole.
    """
    max_bytes = max(2048, reserve_tokens * 3)
    for block in msg.content:
        if not isinstance(block, TextBlock):
            continue
        if len(block.text.encode("utf-8", "replace")) <= max_bytes:
            continue
        parsed = parse_truncation_notice(block.text)
        if (
            parsed is not None
            and parsed[1].file_path
            and hook.request_store.owns(_in_workspace(hook, parsed[1].file_path))
        ):
            block.text = truncate_text_output(block.text, max_bytes=max_bytes)
            continue
        # A notice that is not ours (the user pasted a cut output) is part of the request.
        cut, saved = await offload_and_cut(
            hook.request_store, block.text, max_bytes, hook.workspace, recut_notice=False
        )
        if saved is None:
            await hook.emit(
                ContextEvent(
                    kind="warning",
                    agent_name=agent.name,
                    session_id=str(agent.state.session_id),
                    message=(
                        f"the latest request ({len(block.text)} characters) could not be saved "
                        f"to {hook.request_store.directory}, so it was kept whole instead of cut"
                    ),
                )
            )
            continue
        block.text = cut


def _in_workspace(hook: MemoryCompactionHook, path: str) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() else hook.workspace / candidate


def _summary_budget_chars(window: int) -> int:
    """About 8% of the window (in characters), so the summary never crowds out the context."""
    return max(2000, min(16000, int(window * 0.08 * 3)))


def _relative(hook: MemoryCompactionHook, path: Any) -> str:
    try:
        return str(path.relative_to(hook.workspace))
    except ValueError:
        return str(path)
