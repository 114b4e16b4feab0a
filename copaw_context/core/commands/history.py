"""QwenPaw's history commands: ``/history``, ``/dump_history [path]``, ``/load_history path``.

``/history`` lists what the model receives now, one line per message with its tokens.
``/dump_history`` writes the context and the summary, in the host's own message form, to a
JSON file in the workspace; ``/load_history`` reads such a file back. A file is checked
whole (JSON, shape, message form, every message, tool calls paired with their results)
before anything changes, so an invalid file leaves the context as it was; a valid one
replaces the context only after the current messages are archived (or kept in the session
state while the archive is unwritable), so nothing is lost either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from copaw_context.core.commands.history_rules import (
    HistoryRuleError,
    check_conversation,
    check_nesting,
)
from copaw_context.core.commands.shared_dumps import (
    HISTORY_FORMAT,
    check_dump_name,
    fetch_dump,
    share_dump,
    shared_dump_exists,
)
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.host.protocol import HostSession, MessageView
from copaw_context.core.planning.pairing import pair_by_occurrence
from copaw_context.core.steps.archive import archive_records, shielded, write_records
from copaw_context.core.steps.summary_room import bound_loaded_summary, loaded_summary_message
from copaw_context.core.summary import split_summary_message
from copaw_context.core.tools.read_tool import extra_read_roots
from copaw_context.core.workspace import durable
from copaw_context.core.workspace.confine import OutsideWorkspaceError, outside_reason
from copaw_context.core.workspace.confine_write import open_dir, replace_at
from copaw_context.core.workspace.safe_open import ReadFailure, is_path_allowed, open_inside

__all__ = [
    "HISTORY_FORMAT",
    "HistoryFileError",
    "dump_history",
    "history_lines",
    "load_history",
    "read_history_file",
]

_MAX_REPLY_CHARS = 10000  # QwenPaw's history_max_length
_MAX_FILE_BYTES = 64 * 1024 * 1024
_PREVIEW_CHARS = 80


class HistoryFileError(ValueError):
    """A history file that cannot be loaded; the message says why and where."""


def _shown(argument: str) -> str:
    """A name the user gave, quoted and cut to fit in a reply."""
    return repr(argument if len(argument) <= 200 else argument[:200] + "…")


def _preview(view: MessageView) -> str:
    """The message's first text (a host's injected hint only when it has no text)."""
    for kind in ("text", "hint"):
        for part in view.parts:
            if part.kind == kind and part.text.strip():
                text = " ".join(part.text.split())
                text = text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"
                return text if kind == "text" else f"(hint) {text}"
    kinds = [f"{p.kind} {p.tool_name}" if p.tool_name else p.kind for p in view.parts if p.sent]
    return ", ".join(kinds) or "(empty)"


async def history_lines(ctx: StepContext, host: HostSession) -> str:
    """The ``/history`` reply: one line per context message with its tokens."""
    ledger, _ = await ctx.sync(host)
    report = await ctx.report(host)
    lines = [
        f"**Context history** ({report.message_count} messages, {report.messages} tokens; "
        f"summary {report.summary} tokens; total {report.total} of {report.window})",
        "",
    ]
    used = sum(len(line) + 1 for line in lines)
    for index, entry in enumerate(ledger.messages):
        view = host.view(index)
        pinned = " · pinned" if entry.pinned else ""
        line = f"{index + 1}. {view.role} ({view.name}) · {entry.tokens} tokens{pinned} · "
        line += _preview(view)
        if used + len(line) > _MAX_REPLY_CHARS:
            rest = len(ledger.messages) - index
            lines.append(f"… {rest} more message(s); /dump_history writes them all to a file")
            break
        lines.append(line)
        used += len(line) + 1
    if not ledger.messages:
        lines.append("(the context is empty)")
    return "\n".join(lines)


_LINK = " is a symbolic link to "  # in outside_reason's text when a link is on the way


def _inside(workspace: Path, argument: str, default: Path) -> Path:
    """A path the user named, resolved against the workspace; dumps stay inside it."""
    path = Path(argument).expanduser() if argument else default
    path = path if path.is_absolute() else workspace / path
    resolved = path.resolve()
    if not resolved.is_relative_to(workspace.resolve()):
        named = f"{argument!r}" if argument else f"The default dump folder {path.parent}"
        reason = outside_reason(path, workspace)
        fix = "Remove the link (or make it a real folder), or pass" if _LINK in reason else "Pass"
        raise HistoryFileError(
            f"{named} is outside the workspace {workspace}: {reason}; dumps are written only "
            f"inside it. {fix} another path relative to the workspace: /dump_history <path>"
        )
    return resolved


def _write_new(workspace: Path, argument: str, default: Path, text: str) -> Path:
    """Write ``text`` to a new file (never over an existing one); return its path. The folder
    is opened by descriptor from the workspace root: one swapped for a link out after the
    name was checked is refused, nothing is created there."""
    path = _inside(workspace, argument, default)
    if path.exists():
        raise HistoryFileError(f"{path} already exists; name another file")
    try:
        dir_fd = open_dir(path.parent, workspace)
    except OutsideWorkspaceError as error:
        raise HistoryFileError(str(error).rstrip(".")) from None
    temp = f".dump-{uuid.uuid4().hex}.tmp"
    durable.flush()  # the saved outputs the dump names are on disk before it
    try:
        data = text.encode("utf-8")
        replace_at(dir_fd, temp, temp + "~", lambda handle: handle.write(data), keep_mode=False)
        try:  # fails if the name was taken meanwhile: never overwrite
            os.link(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except FileExistsError:
            raise HistoryFileError(f"{path} already exists; name another file") from None
        except OSError:  # a file system without hard links
            os.replace(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        os.close(dir_fd)
    return path


async def dump_history(ctx: StepContext, host: HostSession, argument: str) -> str:
    """The ``/dump_history [path]`` reply; the file holds the context and the summary."""
    ledger, _ = await ctx.sync(host)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    dialog = ctx.settings.dialog_path
    default = Path(dialog) / "dumps" / f"history-{stamp}.json"
    records = archive_records(host, [(i, None) for i in range(len(ledger.messages))])
    data = {
        "format": HISTORY_FORMAT,
        "form": host.message_form,
        "session_id": host.session_id,
        "agent_name": host.agent_name,
        "dumped_at": datetime.now().astimezone().isoformat(),
        "summary": host.summary_text(),
        "bare_summary": ctx.state(host).summary,
        "messages": [r.message for r in records],
    }
    text = json.dumps(data, ensure_ascii=False, indent=1)
    try:
        named = await asyncio.to_thread(_inside, ctx.workspace, argument, default)
        if (why := await asyncio.to_thread(check_dump_name, ctx, named)) is not None:
            raise HistoryFileError(f"{why}; name another file, e.g. dumps/<name>.json")
        if await shared_dump_exists(ctx, named):
            raise HistoryFileError(
                f"another worker's dump {ctx.relative(named)} already exists in the workspace "
                "store (/load_history loads it); name another file"
            )
        path = await asyncio.to_thread(_write_new, ctx.workspace, argument, default, text)
    except HistoryFileError as exc:
        return f"**Not dumped.** {exc}."
    except (ValueError, OSError, RuntimeError) as exc:  # a NUL, a name too long, ~nobody
        return f"**Not dumped.** {_shown(argument or str(default))} could not be written ({exc})."
    return (
        f"**History dumped.** {len(records)} message(s) and the summary written to "
        f"{ctx.relative(path)}; load them back with `/load_history {ctx.relative(path)}`."
        + await share_dump(ctx, path)
    )


def _read(workspace: Path, roots: Sequence[Path], argument: str) -> tuple[Path, Any]:
    path = Path(argument).expanduser()
    path = path if path.is_absolute() else workspace / path
    # Checked before anything is read (or said about the file): a chat user must not be able
    # to load, or probe for, files outside the folders read_file may read.
    if not is_path_allowed(path, workspace, roots):
        reason = outside_reason(path, workspace)
        fix = " (not a link to it)" if _LINK in reason else ""
        raise HistoryFileError(
            f"{argument!r} is outside the workspace {workspace} (and the extra_read_roots): "
            f"{reason}; history files are loaded only from inside them. Copy the file into "
            f"the workspace{fix} and load that copy"
        )
    path = path.resolve()
    if not path.exists():
        raise HistoryFileError(f"{path} does not exist")
    try:  # opened once, no link followed, a regular file inside the roots (never a FIFO)
        stream, path = open_inside(path, [workspace, *roots])
    except ReadFailure as exc:
        raise HistoryFileError(str(exc).rstrip(".")) from None
    try:
        with stream:
            raw = stream.read(_MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise HistoryFileError(f"{path} cannot be read ({exc.strerror or exc})") from None
    if len(raw) > _MAX_FILE_BYTES:
        raise HistoryFileError(f"{path} is over the {_MAX_FILE_BYTES}-byte limit")
    try:
        return path, json.loads(raw.decode("utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise HistoryFileError(
            f"{path} is not a JSON file (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise HistoryFileError(f"{path} is not a JSON file ({exc})") from None


def _shape(data: Any, form: str) -> tuple[list[Mapping[str, Any]], str, str | None]:
    """(messages, summary message, bare summary) of a dump file's content."""
    if isinstance(data, list):  # a bare list of messages (e.g. written by another tool)
        data = {"messages": data}
    if not isinstance(data, Mapping):
        raise HistoryFileError('it must hold a JSON object with a "messages" list')
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise HistoryFileError('its "messages" must be a list of messages')
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise HistoryFileError(f"message {index + 1} is not a JSON object")
    file_form = data.get("form")
    if file_form is not None and file_form != form:
        raise HistoryFileError(
            f"it holds {file_form} messages and this agent loads {form} messages (a dump "
            "loads back into an agent of the same AgentScope major)"
        )
    summary = data.get("summary", "")
    bare = data.get("bare_summary")
    if not isinstance(summary, str) or not (bare is None or isinstance(bare, str)):
        raise HistoryFileError('its "summary" and "bare_summary" must be text')
    # A blank summary is no summary: it would reach the model as an empty message.
    return messages, summary if summary.strip() else "", bare if bare and bare.strip() else None


def _check_pairs(views: Sequence[MessageView]) -> None:
    """Unique message ids; every tool call answered by a later result, every result answering
    an earlier call (paired by occurrence, the engine's one rule). Numbered from 1."""
    seen_ids: set[str] = set()
    for index, view in enumerate(views):
        if view.msg_id in seen_ids:
            raise HistoryFileError(f"message {index + 1} repeats the id {view.msg_id!r}")
        seen_ids.add(view.msg_id)
    pairing = pair_by_occurrence(
        [
            (
                [p.call_id for p in view.parts if p.kind == "tool_call" and p.call_id],
                [p.call_id for p in view.parts if p.kind == "tool_result" and p.call_id],
            )
            for view in views
        ]
    )
    for call, index, earlier in pairing.duplicates:
        raise HistoryFileError(
            f"message {index + 1} makes the tool call {call!r} again while the one of "
            f"message {earlier + 1} has no result yet"
        )
    for call, index in pairing.orphans:
        raise HistoryFileError(
            f"message {index + 1} holds a result for the call {call!r}, which no earlier "
            "message makes"
        )
    for call, index in pairing.unanswered:
        raise HistoryFileError(f"the tool call {call!r} of message {index + 1} has no result")


async def read_history_file(
    ctx: StepContext, host: HostSession, argument: str
) -> tuple[Path, list[Mapping[str, Any]], str, str | None]:
    """A history file, checked whole: (path, messages, summary message, bare summary); the
    summary message is rendered from the bare summary when the file has none."""
    if not argument:
        raise HistoryFileError("name the file: /load_history PATH (e.g. one /dump_history wrote)")
    roots = extra_read_roots(ctx.config, ctx.workspace)
    unfetched = await fetch_dump(ctx, argument, _MAX_FILE_BYTES)  # another worker's dump
    if unfetched:
        raise HistoryFileError(unfetched)
    try:
        path, data = await asyncio.to_thread(_read, ctx.workspace, roots, argument)
    except HistoryFileError:
        raise
    except (ValueError, OSError, RuntimeError) as exc:  # a NUL, a name too long, ~nobody
        raise HistoryFileError(f"{_shown(argument)} cannot name a file ({exc})") from None
    try:
        messages, summary, bare = _shape(data, host.message_form)
    except HistoryFileError as exc:
        raise HistoryFileError(f"{ctx.relative(path)}: {exc}") from None
    try:
        check_nesting(messages)
        views = host.views_of(messages)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise HistoryFileError(str(exc)) from None
    _check_pairs(views)
    summary = loaded_summary_message(ctx, summary, bare)
    try:  # the opening rule holds unless a summary message really goes in front
        check_conversation(views, has_summary=bool(summary))
    except HistoryRuleError as exc:
        raise HistoryFileError(str(exc)) from None
    return path, messages, summary, bare


async def load_history(ctx: StepContext, host: HostSession, argument: str) -> str:
    """The ``/load_history path`` reply: archive the context, then load the file's."""
    if host.awaiting_confirmation():
        return "**Not loaded.** A tool call is waiting for your confirmation; answer it first."
    try:
        path, messages, summary, bare = await read_history_file(ctx, host, argument)
    except HistoryFileError as exc:
        return f"**Not loaded.** {exc}. The context is unchanged."
    ledger, _ = await ctx.sync(host)
    count = len(ledger.messages)
    records = archive_records(host, [(i, None) for i in range(count)])
    state = ctx.state(host)
    summary, bare, note = await bound_loaded_summary(ctx, host, summary, bare)

    async def archive_then_load() -> bool:
        written = await write_records(ctx, host, records)
        await host.load_context(messages, summary)
        ledger.reset()
        state.forget_conversation()
        state.summary = (
            bare if bare is not None else (split_summary_message(summary) if summary else None)
        )
        return written is not None

    archived = await shielded(archive_then_load())
    dialog = ctx.settings.dialog_path
    where = f"archived to {dialog}/" if archived else "kept in the session state"
    return (
        f"**History loaded.** {len(messages)} message(s) from {ctx.relative(path)}"
        f"{' with its summary' if summary else ''}; the previous {count} message(s) were "
        f"{where}." + (f" {note}; the full text stays in {ctx.relative(path)}." if note else "")
    )
