"""Running a chat command: the reply text of ``/compact``, ``/context``, ``/clear``, ``/new``
and the history commands (``core.commands.history``)."""

from __future__ import annotations

from copaw_context.core.commands.history import dump_history, history_lines, load_history
from copaw_context.core.commands.parse import COMMANDS, format_compact_reply
from copaw_context.core.context.cache_reuse import describe_reuse, session_reuse
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.events import CompactionRecord
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.steps.archive import (
    archive_records,
    previous_summary,
    shielded,
    write_records,
)
from copaw_context.core.steps.compact import compact
from copaw_context.core.steps.compactor_input import transcript_of
from copaw_context.core.steps.offload_cleanup import OffloadReferences

__all__ = ["Commands"]


class Commands:
    """The chat commands; after each, the offload manifest (``/clear``, ``/new``: the files
    the context named may expire now)."""

    def __init__(self, ctx: StepContext, references: OffloadReferences) -> None:
        self.ctx = ctx
        self.references = references

    async def run(self, host: HostSession, name: str, argument: str) -> str:
        """Execute ``/name argument`` and return the reply text."""
        reply = await run_command(self.ctx, host, name, argument)
        await self.references.record(host)
        return reply


async def run_command(ctx: StepContext, host: HostSession, name: str, argument: str) -> str:
    """Execute a chat command and return the reply text."""
    if name == "context":
        report = (await ctx.report(host)).describe()
        return f"{report}\n{describe_reuse(session_reuse(host))}"
    if name == "history":
        return await history_lines(ctx, host)
    if name == "dump_history":
        return await dump_history(ctx, host, argument)
    if name == "load_history":
        return await load_history(ctx, host, argument)
    if name in ("clear", "new"):
        return await _clear(ctx, host, new_session=name == "new")
    if name != "compact":
        raise ValueError(f"unknown command /{name}; the commands are {', '.join(COMMANDS)}")
    before = await ctx.report(host)
    if not before.message_count:
        return "**No messages to compact.** The context is empty; the summary is unchanged."
    event = await compact(ctx, host, trigger="command", note=argument)
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
        had_summary = bool(previous_summary(ctx.state(host), host))
        kept = " The previous summary is kept." if had_summary else ""
        return f"**Nothing compacted.** The {event.message}.{kept}"
    return format_compact_reply(
        compacted=event.messages_compacted,
        tokens_before=before.total,
        tokens_after=event.tokens_after,
        window=before.window,
        summary=previous_summary(ctx.state(host), host),
        fallback_reason=event.fallback_reason,
    )


async def _clear(ctx: StepContext, host: HostSession, *, new_session: bool) -> str:
    if host.awaiting_confirmation():
        return (
            "**Not cleared.** A tool call is waiting for your confirmation (or an external "
            "result); answer or interrupt it first, then clear."
        )
    ledger, _ = await ctx.sync(host)
    count = len(ledger.messages)
    groups = [(index, None) for index in range(count)]
    records = archive_records(host, groups)
    transcript = tuple(transcript_of(host.view(index)) for index in range(count))
    session = host.session_id
    state = ctx.state(host)
    summary = previous_summary(state, host) or None  # kept for recall by the listeners

    async def archive_then_clear() -> bool:
        written = await write_records(ctx, host, records)
        await host.clear(new_session=new_session)
        ledger.reset()
        state.forget_conversation()
        return written is not None

    archived = await shielded(archive_then_clear())
    if transcript or summary:
        await ctx.notify(
            CompactionRecord(
                trigger="new" if new_session else "clear",
                session_id=session,
                agent_name=host.agent_name,
                messages=transcript,
                summary=summary,
                archive_files=(),
            )
        )
    dialog = ctx.settings.dialog_path
    where = f" to {dialog}/" if count else ""
    if count and not archived:
        where = f" to the session state ({dialog}/ is not writable; they are written there later)"
    if new_session:
        return (
            f"**New session started.** {count} message(s) archived{where}; "
            "context and summary cleared."
        )
    return f"**Context cleared.** {count} message(s) archived{where}; summary cleared."
