"""The summary message within its room: a loaded one bounded like a compactor's, in characters
and in tokens of the configured counter (:func:`bound_loaded_summary`), and the last resort when
nothing else is left to cut (:func:`shrink_summary_to_window`: shorter, a pointer, none).

Each reads the bare summary once as a :class:`~copaw_context.core.summary.Summary` and fits it
once to a :class:`~copaw_context.core.summary.budget.SummaryBudget` whose room is what the
message around it leaves (:func:`~copaw_context.core.summary.fit.fit_to_budget`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from copaw_context.core.context.report import TokenReport
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.steps.archive import path_guide, recall_tool
from copaw_context.core.steps.prune import prune_all
from copaw_context.core.summary import (
    Summary,
    render_pointer_message,
    render_summary_message,
    split_summary_message,
)
from copaw_context.core.summary.budget import plan_budget, summary_budget_chars
from copaw_context.core.summary.fit import fit_to_budget

__all__ = ["bound_loaded_summary", "loaded_summary_message", "shrink_summary_to_window"]

logger = logging.getLogger("copaw_context")

_MIN_POINTER_CHARS = 80  # less of a summary than this is not worth a pointer message


def loaded_summary_message(ctx: StepContext, summary: str, bare: str | None) -> str:
    """The summary message a file places: its own, else one rendered from its bare summary
    (``""``: none). Blank texts count as none, so "is there a summary" has one answer."""
    if summary.strip():
        return summary
    return _render(ctx, bare, []) if bare is not None and bare.strip() else ""


async def bound_loaded_summary(
    ctx: StepContext, host: HostSession, summary: str, bare: str | None
) -> tuple[str, str | None, str]:
    """(summary message, bare summary, what was changed) within a compactor's bound, in
    characters and in tokens of the configured counter; the note is ``""`` when nothing
    was changed."""
    if not summary:
        return summary, bare, ""
    report = await ctx.report(host)
    budget = summary_budget_chars(report.window, report.factor)
    max_tokens = budget  # one token a character: what dense scripts (CJK) take
    counter = (await ctx.meter(host)).counter
    text = bare if bare is not None else split_summary_message(summary)
    # The message reaches the model, not only the bare text: it may hold no more than our
    # own rendering of the bare text plus a guide's share (half the budget).
    own = len(_render(ctx, text, [])) + budget // 2
    if len(text) <= budget and len(summary) <= min(own, 2 * budget + 4000):
        tokens = counter.count(summary)  # at most a few 10,000 characters
        if tokens <= max_tokens:
            return summary, bare, ""
    language = ctx.settings.language
    frame = counter.count(_render(ctx, "", []))
    bound = plan_budget(budget, adaptive=False, room=max(0, max_tokens - frame))
    parsed = await asyncio.to_thread(Summary.parse, text, language)
    fitted = (await asyncio.to_thread(fit_to_budget, parsed, bound, counter.count)).text()
    message = _render(ctx, fitted, [])
    tokens = counter.count(message)
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


def _render(ctx: StepContext, bare: str, guide: list[tuple[str, int]]) -> str:
    language = ctx.settings.language
    return render_summary_message(bare, guide, language=language, recall_tool=recall_tool(ctx))


async def shrink_summary_to_window(
    ctx: StepContext, host: HostSession, report: TokenReport
) -> bool:
    """Shorten the summary message until the whole input fits the window (nothing else is
    left to cut); whether it changed. First the summary is cut under the full guide; when
    that is still too much (the system prompt and tool schemas fill most of the window),
    the message becomes a one-line pointer to the archive with the summary cut to what is
    left, then the bare pointer, and as the very last resort no summary message at all
    (the bare summary stays in the session state for the next compaction; the compacted
    messages are in the archive)."""
    state = ctx.state(host)
    message = host.summary_text()
    if not message or report.summary <= 0:
        return False
    bare = state.summary if state.summary is not None else split_summary_message(message)
    guide = await path_guide(ctx, host)
    counter = (await ctx.meter(host)).counter
    language = ctx.settings.language
    parsed = await asyncio.to_thread(Summary.parse, bare, language) if bare else None
    changed = False
    frame = counter.count(_render(ctx, "", guide))
    room = _room(report, frame)  # the bare summary's tokens, under the full guide
    if parsed is not None and room > 0:
        fitted = await _fitted(parsed, len(bare), room, counter.count, floor=200)
        if len(fitted.text()) < len(bare):
            logger.warning(
                "copaw-context: the summary was cut from %d to %d characters to fit the window",
                len(bare),
                len(fitted.text()),
            )
            parsed, state.summary = fitted, fitted.text()
            await host.set_summary(_render(ctx, fitted.text(), guide))
            changed = True
            report = await ctx.report(host)
    if report.total <= report.window:
        return changed
    return await _pointer_instead(ctx, host, report, parsed, guide) or changed


def _room(report: TokenReport, frame: int) -> int:
    """Tokens of our counter a bare summary may take in the window: what everything but the
    summary message leaves, less the message's ``frame`` (its text without the summary)."""
    others = report.total - report.summary * report.factor  # all but the summary message
    return int((report.window - others) / report.factor) - frame


async def _fitted(
    summary: Summary, chars: int, room: int, count: Callable[[str], int], *, floor: int
) -> Summary:
    """``summary`` (``chars`` characters) fitted once to ``room`` tokens."""
    bound = plan_budget(chars, adaptive=False, room=room, floor=floor)
    return await asyncio.to_thread(fit_to_budget, summary, bound, count)


def _opens_with_user(ctx: StepContext, host: HostSession) -> bool:
    """Whether the context's first message (the one after the summary) is the user's."""
    messages = ctx.ledger(host).messages
    return not messages or messages[0].role == "user"


async def _cut_results_for_pointer(
    ctx: StepContext, host: HostSession, report: TokenReport
) -> TokenReport:
    """Cut every tool result harder (full texts stay in ``tool_result/``) until the input
    with the pointer message fits, or the results are as short as a cut makes them."""
    for max_bytes in _POINTER_RESULT_BYTES:
        stats = await prune_all(ctx, host, max_bytes)
        report = await ctx.report(host)
        if report.total <= report.window:
            break
        if stats.truncated == 0 and max_bytes == _POINTER_RESULT_BYTES[-1]:
            break
    return report


_POINTER_RESULT_BYTES = (1024, 512, 256)


async def _pointer_instead(
    ctx: StepContext,
    host: HostSession,
    report: TokenReport,
    bare: Summary | None,
    guide: list[tuple[str, int]],
) -> bool:
    """The full guide leaves no room: a pointer message (with what of the summary fits),
    the bare pointer, or no summary message; logged once a session."""
    language = ctx.settings.language
    recall = recall_tool(ctx)
    before = report.total
    counter = (await ctx.meter(host)).counter
    empty = render_pointer_message("", guide, language=language, recall_tool=recall)
    room = _room(report, counter.count(empty))
    candidates: list[str] = []
    text = bare.text() if bare is not None else ""
    if bare is not None and text and room > 0:
        fitted = await _fitted(bare, len(text), room, counter.count, floor=_MIN_POINTER_CHARS)
        shown = fitted.text()
        if len(shown) >= _MIN_POINTER_CHARS:
            candidates.append(
                render_pointer_message(shown, guide, language=language, recall_tool=recall)
            )
    # Without a summary message the input would open with the assistant's turn, which
    # Anthropic rejects: the bare pointer is then the floor, and old results are cut to it.
    opens_with_user = _opens_with_user(ctx, host)
    candidates += [empty, ""] if opens_with_user else [empty]
    for text in candidates:
        await host.set_summary(text)
        report = await ctx.report(host)
        if report.total <= report.window:
            break
    if report.total > report.window and not opens_with_user:
        report = await _cut_results_for_pointer(ctx, host, report)
    if ctx.state(host).warn_once("summary_pointer"):
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
