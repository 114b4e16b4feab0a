"""Merging two summaries section by section, previous items first."""

from __future__ import annotations

from collections.abc import Sequence

from copaw_context.core.summary.markdown import is_placeholder, item_key
from copaw_context.core.summary.model import Block, Summary

__all__ = ["merge", "union_items"]


def union_items(*lists: Sequence[str]) -> list[str]:
    """The items of ``lists`` in order without duplicates; "(none)" only if nothing else."""
    seen: set[str] = set()
    out: list[str] = []
    for item in (item for items in lists for item in items):
        key = item_key(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    real = [item for item in out if not is_placeholder(item)]
    return real if real else out[:1]


def _union_blocks(*groups: Sequence[Block]) -> list[Block]:
    merged: dict[str, list[str]] = {}
    for block in (block for group in groups for block in group):
        merged[block.title] = union_items(merged.get(block.title, []), block.items)
    return [Block(title=title, items=items) for title, items in merged.items()]


def merge(previous: Summary, new: Summary) -> Summary:
    """``previous`` then ``new`` per section, without duplicates; finished items leave In
    Progress, unknown sections of both are kept. The result has the canonical layout."""
    done = union_items(previous.done, new.done)
    done_keys = {item_key(item) for item in done}
    in_progress = union_items(previous.in_progress, new.in_progress)
    return Summary(
        language=new.language,
        preamble=union_items(previous.preamble, new.preamble),
        goal=union_items(previous.goal, new.goal),
        constraints=union_items(previous.constraints, new.constraints),
        progress_notes=union_items(previous.progress_notes, new.progress_notes),
        done=done,
        in_progress=[item for item in in_progress if item_key(item) not in done_keys],
        blocked=union_items(previous.blocked, new.blocked),
        progress_other=_union_blocks(previous.progress_other, new.progress_other),
        decisions=union_items(previous.decisions, new.decisions),
        next_steps=union_items(previous.next_steps, new.next_steps),
        critical=union_items(previous.critical, new.critical),
        other=_union_blocks(previous.other, new.other),
    )
