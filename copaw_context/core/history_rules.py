"""What a loaded history must satisfy beyond its form, and the bound on its summary.

Providers reject a conversation that opens with the assistant, holds an empty message or a
system message after the conversation began; :func:`check_conversation` refuses such a file
naming the message (numbered from 1, as a user counts them). :func:`check_nesting` refuses
data nested deeper than the archive and the formatters handle. A loaded summary is bounded
like a compactor's, in characters and in tokens of the configured counter
(:func:`bound_loaded_summary`), and :func:`shrink_summary_to_window` is the last resort when
nothing else is left to cut.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from copaw_context.core.archiving import path_guide
from copaw_context.core.compaction import summary_budget_chars
from copaw_context.core.host import HostSession, MessageView
from copaw_context.core.report import TokenReport
from copaw_context.core.summary import (
    fit_summary,
    render_pointer_message,
    render_summary_message,
    split_summary_message,
)

if TYPE_CHECKING:
    from copaw_context.core.engine import ContextEngine

__all__ = [
    "MAX_NESTING",
    "HistoryRuleError",
    "bound_loaded_summary",
    "check_conversation",
    "check_nesting",
    "loaded_summary_message",
    "nesting_depth",
    "shrink_summary_to_window",
]

MAX_NESTING = 100
"""Deepest nesting of objects and lists a loaded message may hold (the message itself is
level 1): pydantic's serialiser and ``copy.deepcopy`` fail a few hundred levels down."""

logger = logging.getLogger(__name__)

_CONTENT_KINDS = ("tool_call", "tool_result", "data")


class HistoryRuleError(ValueError):
    """A conversation a provider would reject; the message names the message and the fix."""


def _has_content(view: MessageView) -> bool:
    return any(
        p.kind in _CONTENT_KINDS or (p.kind in ("text", "hint") and p.text.strip())
        for p in view.parts
        if p.sent or p.kind != "thinking"
    )


def _is_results_only(view: MessageView) -> bool:
    """A message carrying tool results (AgentScope 1.x puts them in system/user messages)."""
    return any(p.kind == "tool_result" for p in view.parts)


def nesting_depth(value: Any) -> int:
    """Levels of objects and lists in ``value`` (``0`` for a scalar); no recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_nesting(messages: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a message nested deeper than :data:`MAX_NESTING` levels (numbered from 1)."""
    for number, message in enumerate(messages, 1):
        depth = nesting_depth(message)
        if depth > MAX_NESTING:
            ident = message.get("id")
            named = f" (id {ident!r})" if isinstance(ident, str) else ""
            raise HistoryRuleError(
                f"message {number}{named} is nested {depth} levels deep and at most "
                f"{MAX_NESTING} are allowed (the archive and the model's formatter cannot "
                "handle deeper data); flatten its content or metadata"
            )


def check_conversation(views: Sequence[MessageView], *, has_summary: bool) -> None:
    """Refuse what providers reject: an empty message, a system message after the
    conversation began, an unknown role, and (with no summary message in front) a
    conversation that does not open with a user message. Messages are numbered from 1."""
    started = False
    for index, view in enumerate(views):
        where = f"message {index + 1} ({view.role}, id {view.msg_id!r})"
        if view.role not in ("user", "assistant", "system"):
            raise HistoryRuleError(
                f"{where} has the role {view.role!r}; use user, assistant or system"
            )
        if not _has_content(view):
            raise HistoryRuleError(
                f"{where} is empty (no text, no tool call or result): providers reject an "
                "empty message; remove it or give it text"
            )
        if view.role == "system" and not _is_results_only(view):
            if started:
                raise HistoryRuleError(
                    f"{where} is a system message in the middle of the conversation: providers "
                    "accept system text only at the start; move it to the top or make it a "
                    "user message"
                )
            continue
        if not started and not has_summary and view.role != "user":
            raise HistoryRuleError(
                f"{where} opens the conversation, which providers require to open with a "
                "user message; add the user's request before it or remove it"
            )
        started = True


def loaded_summary_message(engine: ContextEngine, summary: str, bare: str | None) -> str:
    """The summary message a file places: its own, else one rendered from its bare summary
    (``""``: none). Blank texts count as none, so "is there a summary" has one answer."""
    if summary.strip():
        return summary
    return _render(engine, bare, []) if bare is not None and bare.strip() else ""


async def bound_loaded_summary(
    engine: ContextEngine, host: HostSession, summary: str, bare: str | None
) -> tuple[str, str | None, str]:
    """(summary message, bare summary, what was changed) within a compactor's bound, in
    characters and in tokens of the configured counter; the note is ``""`` when nothing
    was changed."""
    if not summary:
        return summary, bare, ""
    report = await engine.report(host)
    budget = summary_budget_chars(report.window, report.factor)
    max_tokens = budget  # one token a character: what dense scripts (CJK) take
    counter = (await engine.meter(host)).counter
    text = bare if bare is not None else split_summary_message(summary)
    # The message reaches the model, not only the bare text: it may hold no more than our
    # own rendering of the bare text plus a guide's share (half the budget).
    own = len(_render(engine, text, [])) + budget // 2
    if len(text) <= budget and len(summary) <= min(own, 2 * budget + 4000):
        tokens = counter.count(summary)  # at most a few 10,000 characters
        if tokens <= max_tokens:
            return summary, bare, ""
    language = engine.config.light_context_config.language
    limit = budget
    for _ in range(8):  # dense text (CJK, rare scripts) holds more tokens per character
        fitted = await asyncio.to_thread(fit_summary, text, max_chars=limit, language=language)
        message = _render(engine, fitted, [])
        tokens = counter.count(message)
        if tokens <= max_tokens or limit <= 200:
            break
        limit = max(200, int(min(limit, len(fitted)) * max_tokens / tokens * 0.9))
    if len(fitted) < len(text):
        note = (
            f"The summary was shortened from {len(text)} to {len(fitted)} characters "
            f"({tokens} tokens) to fit the window"
        )
    else:  # the bare text fits; the message around it did not
        note = (
            f"The summary message was over its share of the window ({max_tokens} tokens); "
            f"it was rebuilt from the bare summary ({len(fitted)} characters, {tokens} tokens)"
        )
    return message, fitted, note


def _render(engine: ContextEngine, bare: str, guide: list[tuple[str, int]]) -> str:
    recall = "memory_search" if engine.memory.enabled else None
    language = engine.config.light_context_config.language
    return render_summary_message(bare, guide, language=language, recall_tool=recall)


async def shrink_summary_to_window(
    engine: ContextEngine, host: HostSession, report: TokenReport
) -> bool:
    """Shorten the summary message until the whole input fits the window (nothing else is
    left to cut); whether it changed. First the summary is cut under the full guide; when
    that is still too much (the system prompt and tool schemas fill most of the window),
    the message becomes a one-line pointer to the archive with the summary cut to what is
    left, then the bare pointer, and as the very last resort no summary message at all
    (the bare summary stays in the session state for the next compaction; the compacted
    messages are in the archive)."""
    state = engine.state(host)
    message = host.summary_text()
    if not message or report.summary <= 0:
        return False
    bare = state.summary if state.summary is not None else split_summary_message(message)
    room = report.window - (report.total - report.summary)
    guide = await path_guide(engine, host)
    changed = False
    target = max(200, int(len(bare) * room / report.summary * 0.8) - 600) if room > 0 else 0
    if bare and 0 < target < len(bare):
        language = engine.config.light_context_config.language
        fitted = await asyncio.to_thread(fit_summary, bare, max_chars=target, language=language)
        if len(fitted) < len(bare):
            logger.warning(
                "copaw-context: the summary was cut from %d to %d characters to fit the window",
                len(bare),
                len(fitted),
            )
            state.summary = bare = fitted
            host.set_summary(_render(engine, fitted, guide))
            changed = True
            report = await engine.report(host)
    if report.total <= report.window:
        return changed
    return await _pointer_instead(engine, host, report, bare, guide) or changed


async def _pointer_instead(
    engine: ContextEngine,
    host: HostSession,
    report: TokenReport,
    bare: str,
    guide: list[tuple[str, int]],
) -> bool:
    """The full guide leaves no room: a pointer message (with what of the summary fits),
    the bare pointer, or no summary message; logged once a session."""
    language = engine.config.light_context_config.language
    recall = "memory_search" if engine.memory.enabled else None
    before = report.total
    counter = (await engine.meter(host)).counter
    empty = render_pointer_message("", guide, language=language, recall_tool=recall)
    others = report.total - report.summary * report.factor  # all but the summary message
    left = report.window - others - report.factor * counter.count(empty)
    bare_tokens = max(1, counter.count(bare)) * report.factor
    candidates: list[str] = []
    if bare and left > 0:
        chars = int(len(bare) * left / bare_tokens * 0.9)
        for max_chars in (chars, chars // 2):
            if max_chars >= 80:
                fitted = (
                    bare
                    if max_chars >= len(bare)
                    else await asyncio.to_thread(
                        fit_summary, bare, max_chars=max_chars, language=language
                    )
                )
                candidates.append(
                    render_pointer_message(fitted, guide, language=language, recall_tool=recall)
                )
    candidates += [empty, ""]
    for text in candidates:
        host.set_summary(text)
        report = await engine.report(host)
        if report.total <= report.window:
            break
    if engine.state(host).warn_once("summary_pointer"):
        what = (
            "dropped the summary message (its text is kept for the next compaction)"
            if not host.summary_text()
            else "replaced the summary message with a short pointer to the dialog archive"
        )
        logger.warning(
            "copaw-context: the system prompt, tool schemas and the latest messages leave "
            "no room for the summary in the %d-token window: %s (%d -> %d tokens); raise "
            "max_input_length or shorten the system prompt or tool list for a full summary",
            report.window,
            what,
            before,
            report.total,
        )
    return True
