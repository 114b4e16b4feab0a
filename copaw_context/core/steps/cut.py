"""Cutting instead of compacting: fresh results that must fit, and oversized requests.

Results the model has not seen yet are never compacted (it must see them once); when they are
too large for the room a compaction leaves, they are cut harder (their full text stays in
their saved files). When nothing is safe to compact, every tool result is cut to the old limit
and an oversized latest request is cut, its full text saved under ``dialog/requests/`` first.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from copaw_context.core.context.report import Limits, TokenReport
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.events import ContextEvent
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.steps.data_fit import drop_data_to_fit
from copaw_context.core.steps.fresh_share import (
    COMBINED,
    combine_fresh_results,
    compact_pointers,
    omit_unsaved,
    shared_cap,
)
from copaw_context.core.steps.prune import bound_stored, prune_all
from copaw_context.core.steps.summary_room import shrink_summary_to_window
from copaw_context.core.toolresults.offload_cut import offload_parts
from copaw_context.core.toolresults.truncation import parse_truncation_notice, truncate_text_output

logger = logging.getLogger("copaw_context")

__all__ = [
    "NOTICE_BYTES",
    "Cutter",
    "cut_latest_request",
    "cut_pinned_texts",
    "fit_fresh_results",
    "fit_fresh_to_window",
    "request_cap_bytes",
    "truncate_instead",
]

_MIN_REQUEST_BYTES = 2048
_PINNED_CUT_BYTES = 1024
_MIN_FIRST_BYTES = 128  # the first block's excerpt, whatever the markers take
_MIN_SHARE_BYTES = 64  # below this a share is combined into one file
NOTICE_BYTES = 400  # about the size of a truncation notice


def request_cap_bytes(reserve: int, window: int) -> int:
    """Bytes an oversized latest request is cut to: the reserve (at 3 bytes a token), at
    least 2,048 bytes, or half the window's tokens in bytes when that is less (a tiny
    window)."""
    return max(reserve * 3, min(_MIN_REQUEST_BYTES, window // 2))


async def fit_fresh_results(ctx: StepContext, host: HostSession, budget: int, window: int) -> None:
    """Cut the results the model has not seen yet until together they fit ``budget`` tokens
    (in our counter's units): the room (in bytes, at the results' own bytes per token) is
    shared among them (:func:`shared_cap`: small ones whole, each cut counting its notice);
    when a share cannot hold even a notice and a few bytes, they are combined into one
    saved file (:func:`combine_fresh_results`), and when even their pointers do not fit,
    those are shortened (:func:`compact_pointers`). Every full text stays saved."""
    ledger, _meter = await ctx.sync(host)
    for _attempt in range(4):
        fresh = [(i, p) for i, p in ledger.results() if ledger.messages[i].parts[p].unseen]
        entries = [ledger.messages[i].parts[p] for i, p in fresh]
        total = sum(entry.tokens for entry in entries)
        if not fresh or total <= budget:
            return
        ratio = sum(entry.nbytes for entry in entries) / max(1, total)
        room = int(max(0, budget) * ratio * 0.9)
        target = shared_cap([entry.nbytes for entry in entries], room) - NOTICE_BYTES
        if target < _MIN_SHARE_BYTES and await combine_fresh_results(ctx, host, fresh):
            continue
        if _attempt and await compact_pointers(ctx, host, fresh):
            continue  # even the start-line pointers do not fit: the file's index says
        target = max(_MIN_SHARE_BYTES, target)
        for (index, part), entry in zip(fresh, entries, strict=True):
            # A pointer into a combined file is never cut: the first names the file.
            pointer = COMBINED in host.view(index, part).parts[0].meta
            if target < entry.nbytes and not pointer:
                await bound_stored(ctx, host, index, part, target, record_limit=False)


async def fit_fresh_to_window(
    ctx: StepContext, host: HostSession, report: TokenReport, limits: Limits | None
) -> TokenReport:
    """Over the window with everything else as it is (the summary placed, nothing left to
    compact): cut the results the model has not seen yet to what the window leaves them."""
    ledger = ctx.ledger(host)
    fresh = sum(
        ledger.messages[i].parts[p].tokens
        for i, p in ledger.results()
        if ledger.messages[i].parts[p].unseen
    )
    if not fresh:
        return report
    factor = report.factor
    others = report.total - fresh * factor
    budget = int((report.window - others) / factor * 0.98)  # a little slack for the notices
    await fit_fresh_results(ctx, host, budget, report.window)
    after = await ctx.report(host, limits)
    if after.total > after.window:  # no file could be written: the cuts' notices are left
        unseen = [(i, p) for i, p in ledger.results() if ledger.messages[i].parts[p].unseen]
        if await omit_unsaved(ctx, host, unseen):
            after = await ctx.report(host, limits)
    return after


class Cutter:
    """What compacting cannot free, cut (owned by a compaction run): the results the model
    has not seen to their room, an oversized latest request, pinned texts, and as the last
    resort the summary and data blocks. Every full text stays saved."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx

    async def fresh_to_budget(self, host: HostSession, budget: int, window: int) -> None:
        """:func:`fit_fresh_results`: the unseen results within ``budget`` tokens."""
        await fit_fresh_results(self.ctx, host, budget, window)

    async def latest_request(self, host: HostSession, reserve: int, window: int) -> None:
        """:func:`cut_latest_request`."""
        await cut_latest_request(self.ctx, host, reserve, window)

    async def to_window(
        self,
        host: HostSession,
        after: TokenReport,
        limits: Limits | None,
        *,
        last_resort: bool = True,
    ) -> TokenReport:
        """Over the window as things are: cut the unseen results to what the window leaves
        them, then pinned texts; with ``last_resort``, then shrink the summary and drop data
        blocks. Returns the count after the cuts."""
        ctx = self.ctx
        if after.total > after.window:
            after = await fit_fresh_to_window(ctx, host, after, limits)
        if after.total > after.window and await cut_pinned_texts(ctx, host, after.window):
            after = await ctx.report(host, limits)
        if after.total > after.window and not last_resort:
            return after
        if after.total > after.window and await shrink_summary_to_window(ctx, host, after):
            after = await ctx.report(host, limits)
        return await drop_data_to_fit(ctx, host, after, limits)

    async def instead(
        self,
        host: HostSession,
        report: TokenReport,
        base: dict[str, Any],
        trigger: str,
        started: float,
        limits: Limits | None,
        *,
        last_resort: bool = True,
    ) -> ContextEvent | None:
        """:func:`truncate_instead` with this cutter."""
        return await truncate_instead(
            self.ctx, host, report, base, trigger, started, limits, last_resort=last_resort
        )


async def truncate_instead(
    ctx: StepContext,
    host: HostSession,
    report: TokenReport,
    base: dict[str, Any],
    trigger: str,
    started: float,
    limits: Limits | None,
    *,
    last_resort: bool = True,
) -> ContextEvent | None:
    """Nothing is safe to compact: cut tool results (and the request) instead. With
    ``last_resort`` False the caller compacts after all when the input is still over the
    window, so that is not reported as what cannot be cut."""
    if trigger == "command" and report.total <= report.threshold:
        return None
    stats = await prune_all(ctx, host, ctx.settings.pruning_old_msg_max_bytes)
    cutter = Cutter(ctx)
    await cutter.latest_request(host, report.reserve, report.window)
    after = await cutter.to_window(
        host, await ctx.report(host, limits), limits, last_resort=last_resort
    )
    if after.total > after.window and not last_resort:
        return None  # the caller compacts after all (the summary and data fit after it)
    message = f"nothing safe to compact; {stats.truncated} tool result(s) cut"
    if after.total > after.window:
        message += (
            f"; still {after.total} tokens for a {after.window}-token window: what is left "
            "cannot be cut (the request being answered, its tool calls' arguments, pinned "
            "messages, the system prompt and tool schemas)"
        )
        logger.warning("copaw-context: %s", message)
    if stats.truncated == 0 and after.total >= report.total:
        if after.total > after.window:
            event = ContextEvent(
                kind="truncation",
                tokens_before=report.total,
                tokens_after=after.total,
                message=message,
                **base,
            )
            await ctx.emit(event, host)
        return None
    event = ContextEvent(
        kind="truncation",
        tokens_before=report.total,
        tokens_after=after.total,
        messages_kept=after.message_count,
        duration_seconds=ctx.now() - started,
        message=message,
        **base,
    )
    await ctx.emit(event, host)
    return event


async def cut_latest_request(
    ctx: StepContext, host: HostSession, reserve: int, window: int
) -> None:
    """Cut the latest user request in place when it is larger than the reserve allows
    (:func:`request_cap_bytes`).

    Its full text is saved first under ``dialog/requests/``, which TTL cleanup never
    touches: the archived copy of the request will be the cut one. A request we already cut
    is only re-cut (its full text was saved then); when saving fails, the request stays
    whole and an event says so. A request of several text blocks is cut by their total
    (:func:`_cut_message_texts`).
    """
    ledger, _meter = await ctx.sync(host)
    index = next(
        (i for i in range(len(ledger.messages) - 1, -1, -1) if ledger.messages[i].is_request),
        None,
    )
    if index is None:
        return
    await _cut_message_texts(ctx, host, index, request_cap_bytes(reserve, window))


async def cut_pinned_texts(ctx: StepContext, host: HostSession, window: int) -> int:
    """The context cannot fit the window otherwise: cut the texts of pinned messages like an
    oversized request (full text saved under ``dialog/requests/`` first), oldest first, until
    it fits. Each is cut to its share of the room the rest of the input leaves them
    (:func:`pinned_cut_bytes`, at most 1,024 bytes, less in a tiny window). Pinned messages
    are never compacted, but they cannot hold the model's input over its window either.
    Returns how many texts were cut (a message's text blocks are cut by their total, as one)."""
    ledger, _meter = await ctx.sync(host)
    pinned = [i for i, entry in enumerate(ledger.messages) if entry.pinned]
    if not pinned:
        return 0
    max_bytes = pinned_cut_bytes(ctx, host, await ctx.report(host), pinned, window)
    cut_count = 0
    for index in pinned:
        cut_count += await _cut_message_texts(ctx, host, index, max_bytes)
        if cut_count and (await ctx.report(host)).total <= window * 0.98:  # slack
            break
    return cut_count


def pinned_cut_bytes(
    ctx: StepContext, host: HostSession, report: TokenReport, pinned: list[int], window: int
) -> int:
    """Bytes each pinned text is cut to: its share of the room (in bytes, at the pinned
    messages' own bytes per token) the rest of the input leaves them, each cut counting its
    notice and marker (:func:`shared_cap`); at most 1,024 (a quarter of a tiny window), at
    least :data:`_MIN_FIRST_BYTES`."""
    ledger = ctx.ledger(host)
    entries = [ledger.messages[i] for i in pinned]
    tokens = sum(entry.tokens for entry in entries)
    others = report.total - tokens * report.factor
    budget = max(0.0, (window - others) / report.factor * 0.9)
    ratio = sum(entry.nbytes for entry in entries) / max(1, tokens)
    sizes = [
        sum(len(p.text.encode("utf-8", "replace")) for p in host.view(i).parts if p.kind == "text")
        for i in pinned
    ]
    share = shared_cap(sizes, int(budget * ratio)) - NOTICE_BYTES - len(MOVED_TEXT)
    cap = max(256, min(_PINNED_CUT_BYTES, window // 4))
    return max(_MIN_FIRST_BYTES, min(cap, share))


MOVED_TEXT = "[text moved: see the file named in this message's first text]"
"""What the later text blocks of a cut message become, together: ONE such block (their text
is in the first block's file; the other later blocks are dropped, so a cut never grows)."""


async def _cut_message_texts(
    ctx: StepContext, host: HostSession, index: int, max_bytes: int
) -> int:
    """Cut the text blocks of message ``index`` by their total to ``max_bytes``: their joined
    text is saved whole under ``dialog/requests/`` first; the first block keeps the excerpt
    and the notice, the second becomes :data:`MOVED_TEXT` and the later ones are dropped
    (other blocks stay, in order). A cut that would not make the message smaller is not
    made. Returns 1 when it cut, else 0."""
    view = host.view(index)
    positions = [i for i, part in enumerate(view.parts) if part.kind == "text"]
    texts = [view.parts[i].text for i in positions]
    sizes = [len(text.encode("utf-8", "replace")) for text in texts]
    if not texts or sum(sizes) + len(sizes) - 1 <= max_bytes:
        return 0
    marker = len(MOVED_TEXT.encode()) if len(texts) > 1 else 0
    first_bytes = max(_MIN_FIRST_BYTES, max_bytes - marker)
    if first_bytes + NOTICE_BYTES + marker >= sum(sizes):
        return 0  # the cut would not be smaller than the message
    already = all(text == MOVED_TEXT for text in texts[1:])
    if already and await _is_our_request_cut(ctx, texts[0]):
        if sizes[0] <= first_bytes and len(texts) <= 2:
            return 0
        cut: str | None = truncate_text_output(texts[0], max_bytes=first_bytes)
    else:
        cut = await _cut_request_text(ctx, host, texts, first_bytes)
    if cut is None or len(cut.encode("utf-8", "replace")) + marker >= sum(sizes):
        return 0
    ledger, meter = await ctx.sync(host)
    for position, text in zip(positions, [cut, MOVED_TEXT][: len(texts)], strict=False):
        host.set_text(index, position, text)
        ledger.update_part(index, position, host.view(index, position).parts[0], meter)
    if len(positions) > 2:
        await _drop_parts(ctx, host, index, set(positions[2:]))
    return 1


async def _drop_parts(ctx: StepContext, host: HostSession, index: int, drop: set[int]) -> None:
    """Drop parts ``drop`` of message ``index`` (the same message, its other parts in order)."""
    kept = [i for i in range(len(host.view(index).parts)) if i not in drop]
    count = len(host.fingerprint())
    await host.commit([(i, kept if i == index else None) for i in range(count)])
    ctx.ledger(host).reset()
    await ctx.sync(host)


async def _cut_request_text(
    ctx: StepContext, host: HostSession, texts: list[str], max_bytes: int
) -> str | None:
    if len(texts) == 1 and await _is_our_request_cut(ctx, texts[0]):
        return truncate_text_output(texts[0], max_bytes=max_bytes)
    # A notice that is not ours (the user pasted a cut output, or forged one naming a file
    # under dialog/requests/) is part of the request.
    cut, saved_path = await offload_parts(ctx.request_store, texts, max_bytes, ctx.workspace)
    if saved_path is not None:
        return cut
    text = "\n".join(texts)
    await ctx.emit(
        ContextEvent(
            kind="warning",
            agent_name=host.agent_name,
            session_id=host.session_id,
            message=(
                f"the latest request ({len(text)} characters) could not be saved to "
                f"{ctx.request_store.directory}, so it was kept whole instead of cut"
            ),
        )
    )
    return None


async def _is_our_request_cut(ctx: StepContext, text: str) -> bool:
    """Whether ``text`` is a cut we made: its notice names a file under ``dialog/requests/``
    that exists and starts with the excerpt (the cut is from line 1). A notice merely naming
    such a path (forged, a file since removed, a link, a path out of the workspace) is
    content, so nothing is dropped."""
    parsed = parse_truncation_notice(text)
    if parsed is None or not parsed[1].file_path:
        return False
    body, notice = parsed
    if notice.start_line != 1 or notice.start_offset != 0:
        return False
    saved = Path(notice.file_path or "")
    saved = saved if saved.is_absolute() else ctx.workspace / saved
    if not ctx.request_store.owns(saved):
        return False
    head = body.encode("utf-8", "replace")
    # Through the workspace's file store (open_blob): a link or a path out of it is not ours.
    local = await ctx.request_store.starts_with(saved, head)
    if local is not None or ctx.blobs is None:
        return bool(local)
    key = ctx.blobs.key(saved.parent, saved.name)
    return key is not None and await ctx.blobs.starts_with(key, head)
