"""One compaction: plan a pair-safe split, summarise, archive (write-ahead), commit, event.

The archive write and the context update run shielded from cancellation: an interruption
must not land between them, or messages would be archived twice or lost. When nothing is
safe to compact, tool results (and an oversized latest request) are cut instead. A storm
guard keeps the LLM compactor from running again before the context grew by
``recompact_growth_ratio`` of the window after a compaction that freed too little.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from copaw_context.core.archive import ArchivedFile
from copaw_context.core.errors import ArchiveError
from copaw_context.core.events import CompactionRecord, ContextEvent
from copaw_context.core.host import ArchiveRecord, HostSession, MessageView
from copaw_context.core.ledger import Ledger
from copaw_context.core.pruning import offload_and_cut
from copaw_context.core.report import Limits, TokenReport
from copaw_context.core.session_state import SessionState
from copaw_context.core.split import SplitPlan, plan_split
from copaw_context.core.summary import (
    SummaryCompactor,
    render_summary_message,
    split_summary_message,
)
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.core.truncation import parse_truncation_notice, truncate_text_output

if TYPE_CHECKING:
    from copaw_context.core.engine import ContextEngine

__all__ = [
    "Trigger",
    "archive_records",
    "compact",
    "previous_summary",
    "shielded",
    "summary_budget_chars",
    "transcript_of",
]

logger = logging.getLogger("copaw_context")

Trigger = Literal["auto", "command", "overflow"]
_T = TypeVar("_T")
_TAIL_BYTES = 3000
_GUIDE_FILES = 7


def summary_budget_chars(window: int) -> int:
    """About 8% of the window (in characters), so the summary never crowds out the context."""
    return max(2000, min(16000, int(window * 0.08 * 3)))


async def shielded(operation: Awaitable[_T]) -> _T:
    """Run ``operation`` to the end even if the caller is cancelled meanwhile."""
    task = asyncio.ensure_future(operation)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


def previous_summary(state: SessionState, host: HostSession) -> str:
    """The bare structured summary (without the dialog guide), for merging."""
    stored = state.summary
    if stored is not None:
        return stored
    text = host.summary_text()
    return split_summary_message(text) if text else ""


def transcript_of(view: MessageView, parts: Sequence[int] | None = None) -> TranscriptMessage:
    """One message (or only ``parts`` of it) as the compactor and summariser see it."""
    chosen = view.parts if parts is None else [view.parts[i] for i in parts]
    out: list[TranscriptPart] = []
    for part in chosen:
        if part.kind in ("text", "thinking", "hint"):
            out.append(TranscriptPart(part.kind, part.text))
        elif part.kind == "tool_call":
            out.append(
                TranscriptPart("tool_call", part.tool_input or "", part.tool_name, part.call_id)
            )
        elif part.kind == "tool_result":
            texts = "\n".join(p for p in part.output if isinstance(p, str))
            out.append(
                TranscriptPart("tool_result", texts, part.tool_name, part.call_id, part.is_error)
            )
        elif part.kind == "data":
            out.append(TranscriptPart("data", part.text))
    return TranscriptMessage(view.role, view.name, tuple(out), view.timestamp)


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


def archive_records(
    host: HostSession, groups: Sequence[tuple[int, Sequence[int] | None]]
) -> list[ArchiveRecord]:
    return [host.archive_record(message, parts) for message, parts in groups]


async def compact(
    engine: ContextEngine,
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
    started = engine.now()
    report = await engine.report(host, limits)
    state = engine.state(host)
    base = _event_base(host, report, trigger)
    if trigger == "auto" and report.total <= report.threshold:
        return None
    await _warn_fixed_parts(engine, state, report, base)
    plan, refs = _plan(engine, host, report, trigger)
    if not plan.compact:
        return await _truncate_instead(engine, host, report, base, trigger, started, limits)

    light = engine.config.light_context_config
    margin = int(light.recompact_growth_ratio * report.window)
    guard = state.guard_total
    use_llm = trigger != "auto" or guard is None or report.total >= guard + margin
    ledger = engine.ledger(host)
    to_compact = _whole(_groups(refs, plan.compact), ledger)
    to_keep = _whole(_groups(refs, plan.keep), ledger)
    include_thinking = light.context_compact_config.compact_with_thinking_block
    transcript = [transcript_of(host.view(m), parts) for m, parts in to_compact]
    if not include_thinking:
        transcript = [_without_thinking(message) for message in transcript]
    transcript = await _with_saved_tails(engine, transcript)
    result = await SummaryCompactor(
        mode=light.compactor if use_llm else "extractive",
        counter=(await engine.meter(host)).counter,
        language=light.language,
        timeout_seconds=light.compactor_timeout_seconds,
        retries=light.compactor_retries,
        retry_delay=engine.compactor_retry_delay,
        include_thinking=include_thinking,
        max_summary_chars=summary_budget_chars(report.window),
    ).summarise(
        transcript,
        previous_summary=previous_summary(state, host),
        model=host.compactor_model(),
        extra_instruction=note,
    )
    records = archive_records(host, to_compact)
    try:
        guide = await _archive_and_apply(engine, host, state, records, to_keep, result.summary)
    except ArchiveError as exc:
        state.guard_total = report.total
        event = ContextEvent(
            kind="compaction_failed",
            tokens_before=report.total,
            tokens_after=report.total,
            duration_seconds=engine.now() - started,
            message=f"dialog archive not written, nothing removed: {exc}",
            **base,
        )
        await engine.emit(event)
        return event
    if plan.request_over_reserve:
        await _cut_latest_request(engine, host, report.reserve)
    state.add_stats(compactions=1)
    after = await engine.report(host, limits)
    state.guard_total = after.total if after.total > report.threshold - margin else None
    event = ContextEvent(
        kind="compaction",
        tokens_before=report.total,
        tokens_after=after.total,
        messages_compacted=len(to_compact),
        messages_kept=len(to_keep),
        duration_seconds=engine.now() - started,
        method=result.method,
        fallback_reason=result.fallback_reason if use_llm else "storm guard: extractive",
        archive_files=tuple(p for p, _ in guide),
        **base,
    )
    await engine.emit(event)
    await engine.notify(
        CompactionRecord(
            trigger=trigger,
            session_id=host.session_id,
            agent_name=host.agent_name,
            messages=tuple(transcript),
            summary=result.summary,
            archive_files=event.archive_files,
        )
    )
    return event


def _event_base(host: HostSession, report: TokenReport, trigger: str) -> dict[str, Any]:
    return {
        "agent_name": host.agent_name,
        "session_id": host.session_id,
        "threshold_tokens": report.threshold,
        "window_tokens": report.window,
        "trigger": trigger,
    }


async def _warn_fixed_parts(
    engine: ContextEngine, state: SessionState, report: TokenReport, base: dict[str, Any]
) -> None:
    if report.fixed * report.factor < report.threshold or not state.warn_once("fixed_parts"):
        return
    await engine.emit(
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


def _plan(
    engine: ContextEngine, host: HostSession, report: TokenReport, trigger: Trigger
) -> tuple[SplitPlan, list[tuple[int, int]]]:
    """The split, with a kept tail that leaves room for the fixed parts and a new summary.

    A large system prompt or tool list shrinks the kept tail, so that what stays (with the
    new summary, at most its budget) fits under the threshold instead of compacting again at
    every step.
    """
    factor = report.factor
    summary_room = summary_budget_chars(report.window) // 2  # ~2 chars a token: CJK-safe
    others = round((report.fixed - report.summary) * factor)
    reserve = min(report.reserve, max(0, report.threshold - others - summary_room))
    if trigger == "overflow":
        reserve //= 2
    items, refs = engine.ledger(host).split_items()
    plan = plan_split(
        items,
        threshold_tokens=0 if trigger == "overflow" else int(report.threshold / factor),
        reserve_tokens=int(reserve / factor),
        fixed_tokens=report.fixed,
        force=trigger == "command",
    )
    return plan, refs


def _without_thinking(message: TranscriptMessage) -> TranscriptMessage:
    return replace(message, parts=tuple(p for p in message.parts if p.kind != "thinking"))


async def _archive_and_apply(
    engine: ContextEngine,
    host: HostSession,
    state: SessionState,
    records: list[ArchiveRecord],
    keep: Sequence[tuple[int, Sequence[int] | None]],
    summary: str,
) -> list[tuple[str, int]]:
    """Archive (fsynced) first; only then do the messages leave the context."""
    language = engine.config.light_context_config.language

    async def archive_then_apply() -> list[tuple[str, int]]:
        written = await _append(engine, host, records)
        # Archived: commit at once, so that nothing after this point can archive them again.
        await host.commit(keep)
        engine.ledger(host).reset()
        state.summary = summary
        guide = [(_relative(engine, f.path), f.lines) for f in written]
        host.set_summary(render_summary_message(summary, guide, language=language))
        listed = await _path_guide(engine, host)
        if listed:
            guide = listed
            host.set_summary(render_summary_message(summary, guide, language=language))
        return guide

    return await shielded(archive_then_apply())


async def _append(
    engine: ContextEngine, host: HostSession, records: Sequence[ArchiveRecord]
) -> list[ArchivedFile]:
    return await engine.archive(host).append(
        [r.message for r in records],
        [r.timestamp for r in records],
        [r.archive_id for r in records],
        forms=[r.form for r in records],
    )


async def _path_guide(engine: ContextEngine, host: HostSession) -> list[tuple[str, int]]:
    """The newest archive files with their line counts; best effort (the archive is written)."""
    try:
        files = await engine.archive(host).list_files()
    except Exception as exc:  # the messages are archived and applied; the guide is a nicety
        logger.warning("copaw-context: could not list the dialog archive for the guide: %s", exc)
        return []
    # The newest files are where to look first; older ones sit beside them.
    return [(_relative(engine, f.path), f.lines) for f in files[-_GUIDE_FILES:]]


def _relative(engine: ContextEngine, path: Path) -> str:
    try:
        return str(path.relative_to(engine.workspace))
    except ValueError:
        return str(path)


async def _with_saved_tails(
    engine: ContextEngine, transcript: list[TranscriptMessage]
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
            saved = saved if saved.is_absolute() else engine.workspace / saved
            tail = await engine.store.read_tail(saved, _TAIL_BYTES)
            if tail and tail.strip() and tail not in parsed[0]:
                text = (
                    f"{part.text}\n[last lines of the saved output {parsed[1].file_path}]\n{tail}"
                )
                parts[index] = replace(part, text=text)
        enriched.append(replace(message, parts=tuple(parts)))
    return enriched


async def _truncate_instead(
    engine: ContextEngine,
    host: HostSession,
    report: TokenReport,
    base: dict[str, Any],
    trigger: Trigger,
    started: float,
    limits: Limits | None,
) -> ContextEvent | None:
    """Nothing is safe to compact: cut tool results (and the request) instead."""
    if trigger == "command" and report.total <= report.threshold:
        return None
    old_limit = engine.config.light_context_config.tool_result_pruning_config
    stats = await engine.prune_all(host, old_limit.pruning_old_msg_max_bytes)
    await _cut_latest_request(engine, host, report.reserve)
    after = await engine.report(host, limits)
    if stats.truncated == 0 and after.total >= report.total:
        return None
    event = ContextEvent(
        kind="truncation",
        tokens_before=report.total,
        tokens_after=after.total,
        messages_kept=after.message_count,
        duration_seconds=engine.now() - started,
        message=f"nothing safe to compact; {stats.truncated} tool result(s) cut",
        **base,
    )
    await engine.emit(event)
    return event


async def _cut_latest_request(engine: ContextEngine, host: HostSession, reserve: int) -> None:
    """Cut the latest user request in place when it is larger than the reserve allows.

    Its full text is saved first under ``dialog/requests/``, which TTL cleanup never
    touches: the archived copy of the request will be the cut one. A request we already cut
    is only re-cut (its full text was saved then); when saving fails, the request stays
    whole and an event says so.
    """
    ledger, meter = await engine.sync(host)
    index = next(
        (i for i in range(len(ledger.messages) - 1, -1, -1) if ledger.messages[i].role == "user"),
        None,
    )
    if index is None:
        return
    max_bytes = max(2048, reserve * 3)
    view = host.view(index)
    for position, part in enumerate(view.parts):
        if part.kind != "text" or len(part.text.encode("utf-8", "replace")) <= max_bytes:
            continue
        cut = await _cut_request_text(engine, host, part.text, max_bytes)
        if cut is not None:
            host.set_text(index, position, cut)
            ledger.update_part(index, position, host.view(index, position).parts[0], meter)


async def _cut_request_text(
    engine: ContextEngine, host: HostSession, text: str, max_bytes: int
) -> str | None:
    parsed = parse_truncation_notice(text)
    if parsed is not None and parsed[1].file_path:
        saved = Path(parsed[1].file_path)
        saved = saved if saved.is_absolute() else engine.workspace / saved
        if engine.request_store.owns(saved):
            return truncate_text_output(text, max_bytes=max_bytes)
    # A notice that is not ours (the user pasted a cut output) is part of the request.
    cut, saved_path = await offload_and_cut(
        engine.request_store, text, max_bytes, engine.workspace, recut_notice=False
    )
    if saved_path is not None:
        return cut
    await engine.emit(
        ContextEvent(
            kind="warning",
            agent_name=host.agent_name,
            session_id=host.session_id,
            message=(
                f"the latest request ({len(text)} characters) could not be saved to "
                f"{engine.request_store.directory}, so it was kept whole instead of cut"
            ),
        )
    )
    return None
