"""Sharing the window among many fresh tool results (parallel calls).

:func:`shared_cap` divides the room among the results: small ones stay whole, the rest
share what is left equally (a cut result costs its excerpt plus its notice). When even a
bare notice per result does not fit, :func:`combine_fresh_results` saves every full text
into ONE file under ``tool_result/`` and leaves each result a short pointer into it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from copaw_context.core.host import HostSession
from copaw_context.core.truncation import notice_path

if TYPE_CHECKING:
    from copaw_context.core.engine import ContextEngine

logger = logging.getLogger("copaw_context")

__all__ = ["COMBINED", "combine_fresh_results", "shared_cap"]

COMBINED = "combined"
"""Meta key of a result whose full text is in a combined file (never combined again)."""


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
            f"texts are in {path} (read it with read_file). {where}]"
        )
    return f"[Output moved. {where}]"


async def combine_fresh_results(
    engine: ContextEngine, host: HostSession, fresh: Sequence[tuple[int, int]]
) -> bool:
    """Save the full texts of ``fresh`` into one file and replace each by a pointer to its
    start line (the first names the file). False when nothing was combined (all already
    are, or saving failed: then nothing changed)."""
    todo = [(i, p) for i, p in fresh if COMBINED not in host.view(i, p).parts[0].meta]
    if len(todo) < 2:
        return False
    pieces: list[str] = []
    starts: list[int] = []
    line = 1
    for number, (index, part) in enumerate(todo, 1):
        view = host.view(index, part).parts[0]
        text = "\n".join(p for p in view.output if isinstance(p, str))
        header = f"=== tool result {number} of {len(todo)}: {view.tool_name or 'tool'} ==="
        pieces.append(header)
        starts.append(line + 1)
        pieces.append(text)
        line += 1 + text.count("\n") + 1
    try:
        saved = await engine.pruning.store.save_parts(pieces)
        shown = notice_path(saved.path, engine.workspace)
    except (OSError, ValueError) as exc:
        logger.error("copaw-context: could not save %d combined results (%s)", len(todo), exc)
        return False
    ledger, meter = await engine.sync(host)
    for number, ((index, part), start) in enumerate(zip(todo, starts, strict=True)):
        view = host.view(index, part).parts[0]
        data = [p for p in view.output if not isinstance(p, str)]
        pointer = _pointer(number == 0, len(todo), shown, start)
        meta = {**view.meta, COMBINED: str(saved.path)}
        meta["offloaded"] = [*meta.get("offloaded", []), str(saved.path)]
        host.set_tool_result(index, part, [pointer, *data], meta)
        ledger.update_part(index, part, host.view(index, part).parts[0], meter)
    return True
