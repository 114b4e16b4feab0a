"""Sharing the window among many fresh tool results (parallel calls).

:func:`shared_cap` divides the room among the results: small ones stay whole, the rest
share what is left equally (a cut result costs its excerpt plus its notice). When even a
bare notice per result does not fit, :func:`combine_fresh_results` saves every full text
into ONE file under ``tool_result/`` (an index of where each begins first) and leaves each
result a short pointer into it; when even those pointers do not fit,
:func:`compact_pointers` shortens all but the first (which names the file) to
:data:`COMPACT_POINTER`. When the one file cannot be written, each result is saved alone
and points to its own file (a result whose save fails too is cut as usual, its notice
saying the full text could not be saved; when even those cuts do not fit,
:func:`omit_unsaved` leaves each only a note saying so).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from copaw_context.core.context.step_context import StepContext
from copaw_context.core.host.protocol import HostSession, PartView
from copaw_context.core.toolresults.truncation import notice_path, parse_truncation_notice

logger = logging.getLogger("copaw_context")

__all__ = [
    "COMBINED",
    "COMPACT_POINTER",
    "OMITTED_NOTE",
    "combine_fresh_results",
    "compact_pointers",
    "omit_unsaved",
    "shared_cap",
]

COMBINED = "combined"
"""Meta key of a result whose full text is in a combined file (never combined again)."""
_NUMBER = "combined_number"  # its place in the combined file (1: the pointer naming it)
COMPACT_POINTER = "[see index]"
"""What a result's pointer becomes when even the start-line pointers do not fit."""
OMITTED_NOTE = "[Output omitted: it could not be saved to a file]"
"""What a result cut without a saved copy becomes when even its cut does not fit."""


def shared_cap(sizes: Sequence[int], room: int) -> int:
    """Water-filling: the largest ``cap`` with ``sum(min(size, cap)) <= room``.

    Results of at most ``cap`` bytes keep whole; each larger one gets ``cap`` bytes (its
    excerpt and its notice together). The largest size when everything fits."""
    if not sizes:
        return 0
    remaining = max(0, room)
    ordered = sorted(sizes)
    for position, size in enumerate(ordered):
        share = remaining // (len(ordered) - position)
        if size > share:
            return share
        remaining -= size
    return ordered[-1]


def _pointer(first: bool, count: int, path: str, start_line: int) -> str:
    where = f"In the file named above: start_line={start_line}"
    if first:
        return (
            f"[{count} tool results were too large for the window together; their full "
            f"texts are in {path} (read it with read_file). The file starts with an index "
            f'of the line where each result begins ("{COMPACT_POINTER}": look it up '
            f"there). {where}]"
        )
    return f"[Output moved. {where}]"


def _text(view: PartView) -> str:
    return "\n".join(p for p in view.output if isinstance(p, str))


def _one_line(text: str | None, default: str) -> str:
    """``text`` on one line (a newline in a tool name or call id would shift every start)."""
    return (text or default).replace("\r", " ").replace("\n", " ")[:200]


def _layout(views: Sequence[PartView]) -> tuple[list[str], list[int]]:
    """The combined file's pieces (an index, then each result under a header) and the line
    where each result's text starts."""
    count = len(views)
    texts = [_text(view) for view in views]
    line = 1 + count + 1  # the index's heading and lines, then the first header
    starts: list[int] = []
    for text in texts:
        starts.append(line + 1)
        line += 1 + text.count("\n") + 1
    index = [f"=== index: {count} tool results; the line where each one's full text starts ==="]
    names = [_one_line(view.tool_name, "tool") for view in views]
    for number, (view, name, start) in enumerate(zip(views, names, starts, strict=True), 1):
        call = _one_line(view.call_id, "-")
        index.append(f"result {number} of {count} ({name}, call {call}): line {start}")
    pieces = ["\n".join(index)]
    for number, (name, text) in enumerate(zip(names, texts, strict=True), 1):
        pieces.append(f"=== tool result {number} of {count}: {name} ===")
        pieces.append(text)
    return pieces, starts


async def combine_fresh_results(
    ctx: StepContext, host: HostSession, fresh: Sequence[tuple[int, int]]
) -> bool:
    """Save the full texts of ``fresh`` into one file and replace each by a pointer to its
    start line (the first names the file). When that file cannot be written, each result is
    saved alone and points to its own file. False when nothing was combined (all already
    are, or every save failed: then nothing changed)."""
    todo = [(i, p) for i, p in fresh if COMBINED not in host.view(i, p).parts[0].meta]
    if len(todo) < 2:
        return False
    views = [host.view(index, part).parts[0] for index, part in todo]
    pieces, starts = _layout(views)
    try:
        saved = await ctx.pruning.store.save_parts(pieces)
        shown = saved.key or notice_path(saved.path, ctx.workspace)
    except (OSError, ValueError) as exc:
        logger.error(
            "copaw-context: could not save %d combined results (%s); saving each alone",
            len(todo),
            exc,
        )
        return await _save_each(ctx, host, todo)
    ledger, meter = await ctx.sync(host)
    for number, ((index, part), start) in enumerate(zip(todo, starts, strict=True), 1):
        view = host.view(index, part).parts[0]
        data = [p for p in view.output if not isinstance(p, str)]
        pointer = _pointer(number == 1, len(todo), shown, start)
        meta = {**view.meta, COMBINED: str(saved.path), _NUMBER: number}
        meta["offloaded"] = [*meta.get("offloaded", []), str(saved.path)]
        host.set_tool_result(index, part, [pointer, *data], meta)
        ledger.update_part(index, part, host.view(index, part).parts[0], meter)
    return True


async def compact_pointers(
    ctx: StepContext, host: HostSession, fresh: Sequence[tuple[int, int]]
) -> bool:
    """Shorten the start-line pointers of ``fresh`` (all but the one naming the combined
    file) to :data:`COMPACT_POINTER`: the file's index says where each begins. False when
    none was left to shorten."""
    ledger, meter = await ctx.sync(host)
    changed = False
    for index, part in fresh:
        view = host.view(index, part).parts[0]
        number = view.meta.get(_NUMBER)
        if not isinstance(number, int) or number < 2 or _text(view) == COMPACT_POINTER:
            continue
        data = [p for p in view.output if not isinstance(p, str)]
        host.set_tool_result(index, part, [COMPACT_POINTER, *data], dict(view.meta))
        ledger.update_part(index, part, host.view(index, part).parts[0], meter)
        changed = True
    return changed


def _short_path(path: Path, workspace: Path | None) -> str:
    """``path`` relative to the workspace when it is inside (read_file resolves it there)."""
    if workspace is not None:
        try:
            return str(path.relative_to(workspace))
        except ValueError:
            pass
    return notice_path(path, workspace)


async def _save_each(ctx: StepContext, host: HostSession, todo: Sequence[tuple[int, int]]) -> bool:
    """The combined file could not be written: save each result alone and point to its own
    file. A result whose save fails too is left as it is (cut later, its notice saying the
    full text could not be saved)."""
    ledger, meter = await ctx.sync(host)
    changed = False
    for index, part in todo:
        view = host.view(index, part).parts[0]
        try:
            saved = await ctx.pruning.store.save_parts([_text(view)])
            shown = saved.key or _short_path(saved.path, ctx.workspace)
        except (OSError, ValueError) as exc:
            logger.error("copaw-context: could not save a tool result alone either (%s)", exc)
            continue
        data = [p for p in view.output if not isinstance(p, str)]
        pointer = f"[Output moved to {shown} (read it with read_file)]"
        meta = {**view.meta, COMBINED: str(saved.path)}
        meta["offloaded"] = [*meta.get("offloaded", []), str(saved.path)]
        host.set_tool_result(index, part, [pointer, *data], meta)
        ledger.update_part(index, part, host.view(index, part).parts[0], meter)
        changed = True
    return changed


async def omit_unsaved(
    ctx: StepContext, host: HostSession, fresh: Sequence[tuple[int, int]]
) -> bool:
    """Last resort when no file could be written and the cuts still do not fit the window: a
    result cut without a saved copy keeps only a note that it could not be saved (logged).
    False when there was none."""
    ledger, meter = await ctx.sync(host)
    omitted = 0
    for index, part in fresh:
        view = host.view(index, part).parts[0]
        parsed = parse_truncation_notice(_text(view))
        if parsed is None or parsed[1].file_path is not None:
            continue
        data = [p for p in view.output if not isinstance(p, str)]
        host.set_tool_result(index, part, [OMITTED_NOTE, *data], dict(view.meta))
        ledger.update_part(index, part, host.view(index, part).parts[0], meter)
        omitted += 1
    if omitted:
        logger.error(
            "copaw-context: %d tool results could not be saved and their cuts did not fit "
            "the window: only their sizes are kept",
            omitted,
        )
    return bool(omitted)
