"""Cutting instead of compacting: fresh results that must fit, and oversized requests.

Results the model has not seen yet are never compacted (it must see them once); when they are
too large for the room a compaction leaves, they are cut harder (their full text stays in
their saved files). When nothing is safe to compact, every tool result is cut to the old limit
and an oversized latest request is cut, its full text saved under ``dialog/requests/`` first.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from copaw_context.core.events import ContextEvent
from copaw_context.core.host import HostSession
from copaw_context.core.pruning import offload_and_cut
from copaw_context.core.report import Limits, TokenReport
from copaw_context.core.truncation import parse_truncation_notice, truncate_text_output

if TYPE_CHECKING:
    from copaw_context.core.engine import ContextEngine

logger = logging.getLogger("copaw_context")

__all__ = [
    "NOTICE_BYTES",
    "cut_latest_request",
    "cut_pinned_texts",
    "fit_fresh_results",
    "fit_fresh_to_window",
    "fresh_floor_bytes",
    "request_cap_bytes",
    "truncate_instead",
]

_MIN_FRESH_BYTES = 600
_MIN_REQUEST_BYTES = 2048
_PINNED_CUT_BYTES = 1024
NOTICE_BYTES = 400  # about the size of a truncation notice


def fresh_floor_bytes(window: int) -> int:
    """The smallest excerpt a fresh result is cut to: 600 bytes, less in a window under
    4,800 tokens (an eighth of the window in bytes), so that a few of them, each with its
    notice, still fit a tiny window."""
    return max(64, min(_MIN_FRESH_BYTES, window // 8))


def request_cap_bytes(reserve: int, window: int) -> int:
    """Bytes an oversized latest request is cut to: the reserve (at 3 bytes a token), at
    least 2,048 bytes, or half the window's tokens in bytes when that is less (a tiny
    window)."""
    return max(reserve * 3, min(_MIN_REQUEST_BYTES, window // 2))


async def fit_fresh_results(
    engine: ContextEngine, host: HostSession, budget: int, window: int
) -> None:
    """Cut the results the model has not seen yet until together they fit ``budget`` tokens
    (in our counter's units), each in proportion to its size (at least
    :func:`fresh_floor_bytes`)."""
    ledger, meter = await engine.sync(host)
    floor = fresh_floor_bytes(window)
    for _attempt in range(3):
        fresh = [(i, p) for i, p in ledger.results() if ledger.messages[i].parts[p].unseen]
        total = sum(ledger.messages[i].parts[p].tokens for i, p in fresh)
        if not fresh or total <= budget:
            return
        scale = max(0.0, budget) / total
        for index, part in fresh:
            entry = ledger.messages[index].parts[part]
            # The cut keeps ``target`` bytes of text plus a notice: for a small result the
            # notice is a good part of what it weighs.
            target = max(floor, int(entry.nbytes * scale * 0.9) - NOTICE_BYTES)
            if target < entry.nbytes:
                await engine.bound_stored(host, index, part, target, record_limit=False)


async def fit_fresh_to_window(
    engine: ContextEngine, host: HostSession, report: TokenReport, limits: Limits | None
) -> TokenReport:
    """Over the window with everything else as it is (the summary placed, nothing left to
    compact): cut the results the model has not seen yet to what the window leaves them."""
    ledger = engine.ledger(host)
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
    await fit_fresh_results(engine, host, budget, report.window)
    return await engine.report(host, limits)


async def truncate_instead(
    engine: ContextEngine,
    host: HostSession,
    report: TokenReport,
    base: dict[str, Any],
    trigger: str,
    started: float,
    limits: Limits | None,
) -> ContextEvent | None:
    """Nothing is safe to compact: cut tool results (and the request) instead."""
    if trigger == "command" and report.total <= report.threshold:
        return None
    pruning = engine.config.light_context_config.tool_result_pruning_config
    stats = await engine.prune_all(host, pruning.pruning_old_msg_max_bytes)
    await cut_latest_request(engine, host, report.reserve, report.window)
    after = await engine.report(host, limits)
    if after.total > after.window:
        after = await fit_fresh_to_window(engine, host, after, limits)
    if after.total > after.window and await cut_pinned_texts(engine, host, report.window):
        after = await engine.report(host, limits)
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
            await engine.emit(event, host)
        return None
    event = ContextEvent(
        kind="truncation",
        tokens_before=report.total,
        tokens_after=after.total,
        messages_kept=after.message_count,
        duration_seconds=engine.now() - started,
        message=message,
        **base,
    )
    await engine.emit(event, host)
    return event


async def cut_latest_request(
    engine: ContextEngine, host: HostSession, reserve: int, window: int
) -> None:
    """Cut the latest user request in place when it is larger than the reserve allows
    (:func:`request_cap_bytes`).

    Its full text is saved first under ``dialog/requests/``, which TTL cleanup never
    touches: the archived copy of the request will be the cut one. A request we already cut
    is only re-cut (its full text was saved then); when saving fails, the request stays
    whole and an event says so.
    """
    ledger, meter = await engine.sync(host)
    index = next(
        (i for i in range(len(ledger.messages) - 1, -1, -1) if ledger.messages[i].is_request),
        None,
    )
    if index is None:
        return
    max_bytes = request_cap_bytes(reserve, window)
    view = host.view(index)
    for position, part in enumerate(view.parts):
        if part.kind != "text" or len(part.text.encode("utf-8", "replace")) <= max_bytes:
            continue
        cut = await _cut_request_text(engine, host, part.text, max_bytes)
        if cut is not None:
            host.set_text(index, position, cut)
            ledger.update_part(index, position, host.view(index, position).parts[0], meter)


async def cut_pinned_texts(engine: ContextEngine, host: HostSession, window: int) -> int:
    """The context cannot fit the window otherwise: cut the texts of pinned messages to
    1,024 bytes (less in a tiny window) like an oversized request (full text saved under
    ``dialog/requests/`` first), oldest first, until it fits. Pinned messages are never
    compacted, but they cannot hold the model's input over its window either. Returns how
    many texts were cut."""
    ledger, meter = await engine.sync(host)
    max_bytes = max(256, min(_PINNED_CUT_BYTES, window // 4))
    cut_count = 0
    for index, entry in enumerate(ledger.messages):
        if not entry.pinned:
            continue
        view = host.view(index)
        for position, part in enumerate(view.parts):
            if part.kind != "text" or len(part.text.encode("utf-8", "replace")) <= max_bytes:
                continue
            cut = await _cut_request_text(engine, host, part.text, max_bytes)
            if cut is None:
                continue
            host.set_text(index, position, cut)
            ledger.update_part(index, position, host.view(index, position).parts[0], meter)
            cut_count += 1
        if cut_count and (await engine.report(host)).total <= window:
            break
    return cut_count


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
