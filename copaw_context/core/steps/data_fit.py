"""The last resort for data blocks: images (audio, video) that hold the input over the window.

Data blocks are never compacted away from the request being answered, but a request with
several images can alone exceed the window by our own count (2,000 tokens a block). When
nothing else is left to cut, the oldest data blocks of the context (the latest request's
included) are replaced by a notice, oldest first, until the input fits; inline data is saved
under ``dialog/requests/`` first and the notice names the file (a URL is named as is). When
saving fails, the block stays and a warning says so: nothing is lost.
"""

from __future__ import annotations

import logging

from copaw_context.core.context.report import Limits, TokenReport
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.events import ContextEvent
from copaw_context.core.host.protocol import HostSession

__all__ = ["drop_data_to_fit"]

logger = logging.getLogger("copaw_context")


async def drop_data_to_fit(
    ctx: StepContext, host: HostSession, report: TokenReport, limits: Limits | None
) -> TokenReport:
    """Replace the oldest data blocks by notices until the input fits the window."""
    if report.total <= report.window:
        return report
    ledger, meter = await ctx.sync(host)
    blocks = [
        (index, part)
        for index, entry in enumerate(ledger.messages)
        for part, piece in enumerate(entry.parts)
        if piece.kind == "data"
    ]
    if not blocks:
        return report
    before, dropped, failed = report.total, 0, 0
    for index, part in blocks:
        label = host.view(index, part).parts[0].text
        notice = await _notice(ctx, host, index, part, label, report.window)
        if notice is None:
            failed += 1
            continue
        host.set_data_text(index, part, notice)
        ledger.update_part(index, part, host.view(index, part).parts[0], meter)
        dropped += 1
        report = await ctx.report(host, limits)
        if report.total <= report.window:
            break
    if dropped or failed:
        message = (
            f"{dropped} of {len(blocks)} image/audio/video block(s) replaced by a notice "
            f"naming where the data is, oldest first, to fit the {report.window}-token "
            f"window ({before} -> {report.total} tokens)"
        )
        if failed:
            message += f"; {failed} could not be saved and were kept"
        logger.warning("copaw-context: %s", message)
        await ctx.emit(
            ContextEvent(
                kind="warning",
                agent_name=host.agent_name,
                session_id=host.session_id,
                tokens_before=before,
                tokens_after=report.total,
                window_tokens=report.window,
                message=message,
            )
        )
    return report


async def _notice(
    ctx: StepContext, host: HostSession, index: int, part: int, label: str, window: int
) -> str | None:
    """The notice standing for the block, its data saved first (None when saving failed)."""
    head = label.split(" ", 1)[0] or "[data]"
    url = host.data_url(index, part)
    if not url.startswith("data:"):
        return f"{head} {url} (removed from the context to fit the {window}-token window)"
    try:
        saved = await ctx.request_store.save(url)
    except (OSError, LookupError) as exc:
        logger.warning("copaw-context: could not save a data block (%s); it is kept", exc)
        return None
    try:
        where = str(saved.relative_to(ctx.workspace))
    except ValueError:
        where = str(saved)
    return (
        f"{label} (removed from the context to fit the {window}-token window; saved as a "
        f"data URL in {where})"
    )
