"""The planner's input: :class:`SplitItem` s, their atomic :class:`Unit` s, and the
:class:`SplitIndex` of one sequence (its units and the facts about them that do not depend on
the plan's limits), made once and reused by every plan of the same items.

Calls and results are paired by occurrence (see :mod:`~copaw_context.core.planning.pairing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from copaw_context.core.planning.pairing import pair_by_occurrence

__all__ = ["SplitIndex", "SplitItem", "Unit", "group_units", "index_items", "require_count"]


def require_count(name: str, value: object) -> None:
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
        require_count("SplitItem.message_index", self.message_index)
        require_count("SplitItem.tokens", self.tokens)
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


@dataclass(frozen=True, slots=True)
class SplitIndex:
    """What every plan of one item sequence starts from (see :func:`index_items`).

    ``units``: :func:`group_units` of the items; ``latest_request``: the index of the last
    user request item (None: none); ``item_tokens``: the tokens of every item;
    ``held``: per unit, whether it is kept whatever the limits for its own sake (it holds a
    pinned item, an unfinished call, or comes after one).
    """

    items: Sequence[SplitItem]
    units: tuple[Unit, ...]
    latest_request: int | None
    item_tokens: int
    held: tuple[bool, ...]


def index_items(items: Sequence[SplitItem]) -> SplitIndex:
    """The :class:`SplitIndex` of ``items``: O(n), once per sequence."""
    latest_request: int | None = None
    item_tokens = 0
    for index, item in enumerate(items):
        item_tokens += item.tokens
        if item.is_user_request:
            latest_request = index
    units = tuple(group_units(items))
    held: list[bool] = []
    after_unfinished = False
    for unit in units:
        pinned = False
        for index in range(unit.start, unit.end):
            item = items[index]
            after_unfinished = after_unfinished or item.unfinished
            pinned = pinned or item.pinned
        held.append(after_unfinished or pinned)
    return SplitIndex(items, units, latest_request, item_tokens, tuple(held))
