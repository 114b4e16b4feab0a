"""Split planning: which parts of an over-long context to compact and which to keep.

The adapter flattens the host context into :class:`SplitItem` s, one per content block (or one
per whole user message), in order. :func:`group_units` groups them into atomic :class:`Unit` s
that keep every tool call together with its result, and :func:`plan_split` decides which units
to compact (summarise + archive) and which to keep verbatim.

Unlike the reference ``context_check`` this is O(n), never compacts the live user request, a
pinned block or an unfinished tool call, never splits parallel tool calls, and never keeps a
tool result without its call. Every plan that compacts something keeps a sequence that an
OpenAI- or Anthropic-style API accepts (see :func:`pairing_problems`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SplitItem",
    "SplitPlan",
    "SplitReason",
    "Unit",
    "group_units",
    "pairing_problems",
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
    is always kept), ``pinned`` a block that must never be compacted, and ``unfinished`` a tool
    call that has no result yet (pending, running, awaiting confirmation).
    """

    message_index: int
    tokens: int
    call_ids: frozenset[str] = frozenset()
    result_ids: frozenset[str] = frozenset()
    is_user_request: bool = False
    pinned: bool = False
    unfinished: bool = False

    def __post_init__(self) -> None:
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


@dataclass(frozen=True, slots=True)
class Unit:
    """An atomic group: the contiguous items ``[start, end)`` that must stay together.

    ``orphan_result``: the unit carries a tool result whose call is not earlier in the context
    (missing entirely, e.g. compacted by an older tool, or misordered). ``malformed``: the unit
    carries a duplicated call or result id, or a call that is never answered and not flagged
    ``unfinished``. Keeping either kind would make the provider reject the request, so such
    units are never kept by :func:`plan_split`.
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
    result2`` forms three. Items between a call and its result (text, other messages) fall
    inside that unit. A result without a call, or a call without a result, is its own unit.
    Runs in O(n + number of ids).
    """
    first_seen: dict[str, int] = {}
    last_seen: dict[str, int] = {}
    first_call: dict[str, int] = {}
    call_count: dict[str, int] = {}
    result_count: dict[str, int] = {}
    for index, item in enumerate(items):
        for call_id in item.call_ids:
            call_count[call_id] = call_count.get(call_id, 0) + 1
            first_call.setdefault(call_id, index)
            first_seen.setdefault(call_id, index)
            last_seen[call_id] = index
        for result_id in item.result_ids:
            result_count[result_id] = result_count.get(result_id, 0) + 1
            first_seen.setdefault(result_id, index)
            last_seen[result_id] = index

    # reach[i]: the furthest item that must share a unit with item i because an id that
    # is both called and answered is first mentioned at i and last mentioned there.
    reach = list(range(len(items)))
    for tool_id, first in first_seen.items():
        if tool_id in call_count and tool_id in result_count:
            reach[first] = max(reach[first], last_seen[tool_id])

    units: list[Unit] = []
    start = span_end = tokens = 0
    orphan = malformed = False
    for index, item in enumerate(items):
        span_end = max(span_end, reach[index])
        tokens += item.tokens
        for result_id in item.result_ids:
            if first_call.get(result_id, index + 1) > index:
                orphan = True
            if result_count[result_id] > 1:
                malformed = True
        for call_id in item.call_ids:
            if call_count[call_id] > 1 or (call_id not in result_count and not item.unfinished):
                malformed = True
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
    not even when forced, because the provider would reject the request. ``force`` (the
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

    units = group_units(items)
    forced = _forced_units(items, units, latest_request)
    kept_units = [
        is_forced and unit.keepable for unit, is_forced in zip(units, forced, strict=True)
    ]
    if not force:
        budget = reserve_tokens
        for position in range(len(units) - 1, -1, -1):
            unit = units[position]
            if not unit.keepable:
                break
            if forced[position]:
                continue
            if unit.tokens > budget:
                break
            budget -= unit.tokens
            kept_units[position] = True

    compact: list[int] = []
    keep: list[int] = []
    kept_tokens = fixed_tokens
    for unit, kept in zip(units, kept_units, strict=True):
        if kept:
            keep.extend(range(unit.start, unit.end))
            kept_tokens += unit.tokens
        else:
            compact.extend(range(unit.start, unit.end))

    reason: SplitReason = "forced" if force else "compacted"
    if not compact:
        reason = "nothing-safe-to-compact"
    over_reserve = latest_request is not None and items[latest_request].tokens > reserve_tokens
    return SplitPlan(tuple(compact), tuple(keep), total, kept_tokens, reason, over_reserve)


def _forced_units(
    items: Sequence[SplitItem], units: Sequence[Unit], latest_request: int | None
) -> list[bool]:
    """Per unit: must it be kept (latest request, pinned, unfinished or after unfinished)?"""
    forced: list[bool] = []
    after_unfinished = False
    for unit in units:
        pinned = False
        for index in range(unit.start, unit.end):
            item = items[index]
            after_unfinished = after_unfinished or item.unfinished
            pinned = pinned or item.pinned
        has_request = latest_request is not None and unit.start <= latest_request < unit.end
        forced.append(after_unfinished or pinned or has_request)
    return forced


def pairing_problems(
    sequence: Sequence[tuple[frozenset[str], frozenset[str]]],
    *,
    pending_ids: Collection[str] = (),
) -> list[str]:
    """Describe every tool call/result pairing fault in ``sequence``; empty means valid.

    ``sequence`` holds ``(call_ids, result_ids)`` per item, in order; within one item the
    calls count as coming before the results. Reported: a result before or without its call,
    a second result for one call, a duplicate call id, and a call never answered unless its
    id is in ``pending_ids`` (calls still running or awaiting confirmation).
    """
    all_calls: set[str] = set()
    for calls, _ in sequence:
        all_calls.update(calls)
    first_call: dict[str, int] = {}
    unanswered: dict[str, int] = {}
    answered: set[str] = set()
    problems: list[str] = []
    for index, (calls, results) in enumerate(sequence):
        for call_id in sorted(calls):
            if call_id in first_call:
                problems.append(
                    f"item {index}: tool call id {call_id!r} is a duplicate of the call "
                    f"at item {first_call[call_id]}"
                )
                continue
            first_call[call_id] = index
            unanswered[call_id] = index
        for result_id in sorted(results):
            if result_id in unanswered:
                del unanswered[result_id]
                answered.add(result_id)
            elif result_id in answered:
                problems.append(
                    f"item {index}: tool result {result_id!r} answers a call that already "
                    "has a result"
                )
            elif result_id in all_calls:
                problems.append(f"item {index}: tool result {result_id!r} comes before its call")
            else:
                problems.append(
                    f"item {index}: tool result {result_id!r} has no matching tool call"
                )
    pending = frozenset(pending_ids)
    for call_id, index in unanswered.items():
        if call_id not in pending:
            problems.append(f"item {index}: tool call {call_id!r} is never answered")
    return problems
