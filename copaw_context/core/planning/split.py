"""Split planning: which parts of an over-long context to compact and which to keep.

The adapter flattens the host context into :class:`SplitItem` s, one per content block (or one
per whole user message), in order. :func:`group_units` groups them into atomic :class:`Unit` s
that keep every tool call together with its result, and :func:`plan_split` decides which units
to compact (summarise + archive) and which to keep verbatim.

Calls and results are paired by occurrence, not by id: the k-th call with id X pairs with the
k-th result with id X after it. Some OpenAI-compatible servers reuse ids (``call_0`` on every
turn), so a reused id whose earlier pair is complete starts a new, independent pair.

Unlike the reference ``context_check`` this is O(n), never compacts the live user request, a
pinned block or an unfinished tool call, never splits parallel tool calls, and never keeps a
tool result without its call. Every plan that compacts something keeps a sequence that an
OpenAI- or Anthropic-style API accepts (see
:func:`copaw_context.core.planning.pairing.pairing_problems`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from copaw_context.core.planning.units import (
    SplitIndex,
    SplitItem,
    Unit,
    group_units,
    index_items,
    require_count,
)

__all__ = [
    "SplitIndex",
    "SplitItem",
    "SplitPlan",
    "SplitReason",
    "Unit",
    "group_units",
    "index_items",
    "plan_split",
]

SplitReason = Literal["below-threshold", "compacted", "nothing-safe-to-compact", "forced"]


@dataclass(frozen=True, slots=True)
class SplitPlan:
    """The outcome of :func:`plan_split`.

    ``compact`` and ``keep`` are ascending item indices partitioning ``range(len(items))``.
    ``total_tokens``/``kept_tokens`` include the fixed tokens (system prompt, summary).
    ``request_over_reserve`` is set when the latest user request alone is larger than the
    reserve: it is still kept, and the adapter is expected to truncate it.
    """

    compact: tuple[int, ...]
    keep: tuple[int, ...]
    total_tokens: int
    kept_tokens: int
    reason: SplitReason
    request_over_reserve: bool


def plan_split(
    items: Sequence[SplitItem],
    *,
    threshold_tokens: int,
    reserve_tokens: int,
    fixed_tokens: int = 0,
    force: bool = False,
    index: SplitIndex | None = None,
) -> SplitPlan:
    """Plan which items to compact so that the context shrinks back under the threshold.

    Nothing is compacted while ``fixed_tokens`` + all items <= ``threshold_tokens`` (unless
    ``force``). Otherwise the plan keeps, as whole units:

    * always: the unit of the latest user request, pinned units, and the first unit holding
      an unfinished call together with everything after it ("forced" units; they do not use
      up the reserve);
    * the longest recent tail of other units that fits in ``reserve_tokens``: the walk back
      from the end stops at the first unit that does not fit, or that cannot be kept.

    Units that carry an orphan result or malformed pairing (see :class:`Unit`) are never kept,
    not even when forced, because the provider would reject the request; if the latest user
    request sits in such a unit, that request item alone is kept (it carries no tool ids, so
    it cannot break pairing) and the rest of the unit is compacted. ``force`` (the
    ``/compact`` command) compacts everything except the forced units. When that leaves
    nothing to compact the reason is ``"nothing-safe-to-compact"`` and the adapter should
    truncate instead. Runs in O(n); ``index`` (:func:`index_items` of these ``items``, kept
    by the caller while they do not change) spares the O(n) walks but the plan's assembly.
    """
    require_count("threshold_tokens", threshold_tokens)
    require_count("reserve_tokens", reserve_tokens)
    require_count("fixed_tokens", fixed_tokens)
    if not isinstance(force, bool):
        raise TypeError(f"force must be a bool, got {force!r}")

    if index is None or index.items is not items:
        index = index_items(items)
    latest_request = index.latest_request
    total = fixed_tokens + index.item_tokens
    if not force and total <= threshold_tokens:
        return SplitPlan((), tuple(range(len(items))), total, total, "below-threshold", False)

    keep_from = None
    if force and _answered(items, latest_request):
        # A finished turn goes with its answer (both or neither); a pinned request stays,
        # and so does its answer.
        assert latest_request is not None
        if items[latest_request].pinned:
            keep_from = latest_request
        else:
            latest_request = None
    units = index.units
    forced = _forced_units(index, latest_request, keep_from)
    kept_units = [
        is_forced and unit.keepable for unit, is_forced in zip(units, forced, strict=True)
    ]
    if not force:
        _keep_recent_tail(items, units, forced, kept_units, reserve_tokens)
    compact, keep, kept_tokens = _assemble(items, units, kept_units, latest_request)
    kept_tokens += fixed_tokens

    reason: SplitReason = "forced" if force else "compacted"
    if not compact:
        reason = "nothing-safe-to-compact"
    over_reserve = latest_request is not None and items[latest_request].tokens > reserve_tokens
    return SplitPlan(tuple(compact), tuple(keep), total, kept_tokens, reason, over_reserve)


def _answered(items: Sequence[SplitItem], latest_request: int | None) -> bool:
    """Whether the turn of the latest request is finished: a later message ends it with a
    plain answer (no tool call or result), and no call after the request is unfinished."""
    if latest_request is None or latest_request == len(items) - 1:
        return False
    last = items[-1]
    if last.call_ids or last.result_ids:
        return False
    if last.message_index <= items[latest_request].message_index:
        return False
    return not any(item.unfinished for item in items[latest_request + 1 :])


def _keep_recent_tail(
    items: Sequence[SplitItem],
    units: Sequence[Unit],
    forced: Sequence[bool],
    kept_units: list[bool],
    reserve_tokens: int,
) -> None:
    """Keep the longest run of units from the end that fits the reserve (forced units cost
    nothing; an unkeepable unit ends the run), starting at a user turn where it can."""
    budget = reserve_tokens
    tail_start = len(units)
    for position in range(len(units) - 1, -1, -1):
        unit = units[position]
        if not unit.keepable:
            break
        if not forced[position]:
            if unit.tokens > budget:
                break
            budget -= unit.tokens
            kept_units[position] = True
        tail_start = position
    _start_tail_at_user_turn(items, units, forced, kept_units, tail_start)


def _assemble(
    items: Sequence[SplitItem],
    units: Sequence[Unit],
    kept_units: Sequence[bool],
    latest_request: int | None,
) -> tuple[list[int], list[int], int]:
    """(items to compact, items to keep, tokens kept) for the units chosen."""
    compact: list[int] = []
    keep: list[int] = []
    kept_tokens = 0
    for unit, kept in zip(units, kept_units, strict=True):
        if kept:
            keep.extend(range(unit.start, unit.end))
            kept_tokens += unit.tokens
        elif latest_request is not None and unit.start <= latest_request < unit.end:
            # Safety net: the live request is never compacted, even inside a broken unit.
            compact.extend(range(unit.start, latest_request))
            keep.append(latest_request)
            kept_tokens += items[latest_request].tokens
            compact.extend(range(latest_request + 1, unit.end))
        else:
            compact.extend(range(unit.start, unit.end))
    return compact, keep, kept_tokens


def _start_tail_at_user_turn(
    items: Sequence[SplitItem],
    units: Sequence[Unit],
    forced: Sequence[bool],
    kept_units: list[bool],
    tail_start: int,
) -> None:
    """Never keep the end of a turn whose user message is compacted ("不拆分 user-assistant
    对话对"): when the kept tail starts inside a turn and a later user message is kept, the
    tail starts at that message instead. Forced units stay kept wherever they are."""
    for position in range(tail_start, len(units)):
        unit = units[position]
        if any(items[i].is_user_request for i in range(unit.start, unit.end)):
            if position == tail_start:
                return  # already starts at a user turn
            for earlier in range(tail_start, position):
                if not forced[earlier]:
                    kept_units[earlier] = False
            return


def _forced_units(
    index: SplitIndex,
    latest_request: int | None,
    keep_from: int | None = None,
) -> list[bool]:
    """Per unit: must it be kept (pinned, unfinished or after unfinished: ``index.held``;
    the latest request; at or after ``keep_from``)?"""
    forced = list(index.held)
    units = index.units
    if latest_request is not None:
        forced[_unit_of(units, latest_request)] = True
    if keep_from is not None:
        for position in range(_unit_of(units, keep_from), len(units)):
            forced[position] = True
    return forced


def _unit_of(units: Sequence[Unit], item: int) -> int:
    """The position of the unit holding item ``item`` (units are contiguous and ordered)."""
    low, high = 0, len(units) - 1
    while low < high:
        middle = (low + high) // 2
        if units[middle].end <= item:
            low = middle + 1
        else:
            high = middle
    return low
