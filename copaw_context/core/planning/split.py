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

from copaw_context.core.planning.pairing import pair_by_occurrence

__all__ = [
    "SplitItem",
    "SplitPlan",
    "SplitReason",
    "Unit",
    "group_units",
    "plan_split",
]

SplitReason = Literal["below-threshold", "compacted", "nothing-safe-to-compact", "forced"]


def _require_count(name: str, value: object) -> None:
    """Raise unless ``value`` is a non-negative int (bools are rejected)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}; pass 0 or a positive token count")


@dataclass(frozen=True, slots=True)
class SplitItem:
    """One content block (or one whole user message) of the context, as the planner sees it.

    ``message_index`` is the index of the host message the item comes from (non-decreasing
    along the sequence). ``call_ids``/``result_ids`` are the tool calls made / tool results
    carried by the item. ``is_user_request`` marks a message typed by the user (the latest one
    is always kept); it carries no tool ids. ``pinned`` marks a block that must never be
    compacted, and ``unfinished`` a tool call that has no result yet (pending, running,
    awaiting confirmation).
    """

    message_index: int
    tokens: int
    call_ids: frozenset[str] = frozenset()
    result_ids: frozenset[str] = frozenset()
    is_user_request: bool = False
    pinned: bool = False
    unfinished: bool = False

    def __post_init__(self) -> None:
        if (
            type(self.message_index) is int
            and type(self.tokens) is int
            and self.message_index >= 0
            and self.tokens >= 0
            and type(self.call_ids) is frozenset
            and type(self.result_ids) is frozenset
            and not (self.is_user_request and (self.call_ids or self.result_ids))
        ):
            return  # the common, valid case, checked in one go
        _require_count("SplitItem.message_index", self.message_index)
        _require_count("SplitItem.tokens", self.tokens)
        for name in ("call_ids", "result_ids"):
            ids = getattr(self, name)
            if isinstance(ids, frozenset):
                continue
            if not isinstance(ids, (set, list, tuple)):
                raise TypeError(
                    f"SplitItem.{name} must be a frozenset of tool call ids, got {ids!r}"
                )
            object.__setattr__(self, name, frozenset(ids))
        if self.is_user_request and (self.call_ids or self.result_ids):
            raise ValueError(
                "SplitItem: a user request item cannot carry tool call/result ids "
                f"(got call_ids={sorted(self.call_ids)}, result_ids={sorted(self.result_ids)}); "
                "put tool calls and results in their own items with is_user_request=False"
            )


@dataclass(frozen=True, slots=True)
class Unit:
    """An atomic group: the contiguous items ``[start, end)`` that must stay together.

    ``orphan_result``: the unit carries a tool result that answers no open call (its call is
    missing, e.g. compacted by an older tool, comes later, or already has a result).
    ``malformed``: the unit carries a call whose id is still open from an earlier call (two
    concurrent calls with one id), or a call that is never answered and not flagged
    ``unfinished``. Reusing an id after its earlier call was answered is fine. Keeping either
    kind would make the provider reject the request, so :func:`plan_split` never keeps such a
    unit (only the latest user request inside it, on its own).
    """

    start: int
    end: int
    tokens: int
    orphan_result: bool
    malformed: bool = False

    @property
    def keepable(self) -> bool:
        """Whether the unit can be kept without breaking tool call/result pairing."""
        return not (self.orphan_result or self.malformed)


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


def group_units(items: Sequence[SplitItem]) -> list[Unit]:
    """Group ``items`` into the minimal contiguous units that keep each call with its result.

    Parallel calls ``call1 call2 result1 result2`` form one unit; ``call1 result1 text call2
    result2`` forms three, also when ``call2`` reuses the id of ``call1``. Items between a call
    and its result (text, other messages) fall inside that unit. A result without an open call,
    or a call without a result, is its own unit. Runs in O(n + number of ids).
    """
    pairing = pair_by_occurrence([(item.call_ids, item.result_ids) for item in items])
    reach = list(range(len(items)))  # reach[i]: furthest item sharing a unit with item i
    orphan_at = [False] * len(items)
    malformed_at = [False] * len(items)
    for _, call_index, result_index in pairing.pairs:
        reach[call_index] = max(reach[call_index], result_index)
    for _, result_index in pairing.orphans:
        orphan_at[result_index] = True
    for _, call_index, _earlier in pairing.duplicates:
        malformed_at[call_index] = True
    for _, call_index in pairing.unanswered:
        if not items[call_index].unfinished:
            malformed_at[call_index] = True

    units: list[Unit] = []
    start = span_end = tokens = 0
    orphan = malformed = False
    for index, item in enumerate(items):
        span_end = max(span_end, reach[index])
        tokens += item.tokens
        orphan = orphan or orphan_at[index]
        malformed = malformed or malformed_at[index]
        if index == span_end:
            units.append(Unit(start, index + 1, tokens, orphan, malformed))
            start = span_end = index + 1
            tokens = 0
            orphan = malformed = False
    return units


def plan_split(
    items: Sequence[SplitItem],
    *,
    threshold_tokens: int,
    reserve_tokens: int,
    fixed_tokens: int = 0,
    force: bool = False,
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
    truncate instead. Runs in O(n).
    """
    _require_count("threshold_tokens", threshold_tokens)
    _require_count("reserve_tokens", reserve_tokens)
    _require_count("fixed_tokens", fixed_tokens)
    if not isinstance(force, bool):
        raise TypeError(f"force must be a bool, got {force!r}")

    latest_request: int | None = None
    item_tokens = 0
    for index, item in enumerate(items):
        item_tokens += item.tokens
        if item.is_user_request:
            latest_request = index
    total = fixed_tokens + item_tokens
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
    units = group_units(items)
    forced = _forced_units(items, units, latest_request, keep_from)
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
    items: Sequence[SplitItem],
    units: Sequence[Unit],
    latest_request: int | None,
    keep_from: int | None = None,
) -> list[bool]:
    """Per unit: must it be kept (latest request, pinned, unfinished or after unfinished,
    at or after ``keep_from``)?"""
    forced: list[bool] = []
    after_unfinished = False
    for unit in units:
        pinned = False
        for index in range(unit.start, unit.end):
            item = items[index]
            after_unfinished = after_unfinished or item.unfinished
            pinned = pinned or item.pinned
        has_request = latest_request is not None and unit.start <= latest_request < unit.end
        kept_turn = keep_from is not None and unit.end > keep_from
        forced.append(after_unfinished or pinned or has_request or kept_turn)
    return forced
