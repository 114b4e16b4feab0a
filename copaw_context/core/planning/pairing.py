"""The one tool call/result pairing rule, and the faults it finds.

Calls and results are paired by occurrence, not by id: the k-th call with id X pairs with the
k-th result with id X after it. Some OpenAI-compatible servers reuse ids (``call_0`` on every
turn), so a reused id whose earlier pair is complete starts a new, independent pair.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["OpenCalls", "Pairing", "pair_by_occurrence", "pairing_problems"]


@dataclass(frozen=True, slots=True)
class Pairing:
    """How the tool calls and results of a sequence pair up (see :func:`pair_by_occurrence`).

    Indices are positions in the sequence. ``pairs`` are (id, call, result); ``orphans`` are
    (id, result) with no open call; ``duplicates`` are (id, call, earlier call still open);
    ``unanswered`` are (id, call) that no result answers, oldest first.
    """

    pairs: tuple[tuple[str, int, int], ...]
    orphans: tuple[tuple[str, int], ...]
    duplicates: tuple[tuple[str, int, int], ...]
    unanswered: tuple[tuple[str, int], ...]


class OpenCalls:
    """Calls no result answers (paired by occurrence), folded one message at a time."""

    def __init__(self) -> None:
        self.open: dict[str, int] = {}
        self.folded = 0
        """Messages folded in so far."""

    def fold(self, parts: Iterable[tuple[str, str]]) -> None:
        """Fold one message's ``(kind, call id)`` parts in, in order."""
        _fold(self.open, parts)
        self.folded += 1

    def count(self, extra: Iterable[tuple[str, str]] = ()) -> int:
        """Open calls now, with ``extra`` parts (not folded in) after the folded ones."""
        current = dict(self.open)
        _fold(current, extra)
        return sum(current.values())


def _fold(open_calls: dict[str, int], parts: Iterable[tuple[str, str]]) -> None:
    for kind, call_id in parts:
        if kind == "tool_call":
            open_calls[call_id] = open_calls.get(call_id, 0) + 1
        elif kind == "tool_result" and open_calls.get(call_id):
            open_calls[call_id] -= 1


def pair_by_occurrence(
    sequence: Sequence[tuple[Collection[str], Collection[str]]],
) -> Pairing:
    """Pair ``(call_ids, result_ids)`` per position: each result answers the oldest open call
    with its id (calls of a position come before its results). The one pairing rule every
    part of the package uses; O(n + number of ids)."""
    open_calls: dict[str, deque[int]] = {}
    pairs: list[tuple[str, int, int]] = []
    orphans: list[tuple[str, int]] = []
    duplicates: list[tuple[str, int, int]] = []
    for index, (calls, results) in enumerate(sequence):
        if not calls and not results:
            continue
        for call_id in sorted(calls):
            queue = open_calls.setdefault(call_id, deque())
            if queue:  # a second call with this id while the first is still unanswered
                duplicates.append((call_id, index, queue[0]))
            queue.append(index)
        for result_id in sorted(results):
            queue = open_calls.get(result_id) or deque()
            if queue:
                pairs.append((result_id, queue.popleft(), index))
            else:
                orphans.append((result_id, index))
    unanswered = sorted(
        ((call_id, index) for call_id, queue in open_calls.items() for index in queue),
        key=lambda pair: pair[1],
    )
    return Pairing(tuple(pairs), tuple(orphans), tuple(duplicates), tuple(unanswered))


def pairing_problems(
    sequence: Sequence[tuple[frozenset[str], frozenset[str]]],
    *,
    pending_ids: Collection[str] = (),
) -> list[str]:
    """Describe every tool call/result pairing fault in ``sequence``; empty means valid.

    ``sequence`` holds ``(call_ids, result_ids)`` per item, in order; within one item the
    calls count as coming before the results. Each result answers the oldest open call with
    its id, so reusing an id after its call was answered is valid. Reported: a result with no
    open call (before its call, without any call, or a second result), a call whose id is
    still open from an earlier call, and a call never answered unless its id is in
    ``pending_ids`` (calls still running or awaiting confirmation).
    """
    pairing = pair_by_occurrence(sequence)
    first_call: dict[str, int] = {}
    for index, (calls, _) in enumerate(sequence):
        for call_id in calls:
            first_call.setdefault(call_id, index)
    problems: list[tuple[int, str]] = []
    for call_id, index, earlier in pairing.duplicates:
        problems.append(
            (
                index,
                f"item {index}: tool call id {call_id!r} duplicates the still unanswered "
                f"call at item {earlier}",
            )
        )
    for result_id, index in pairing.orphans:
        called_at = first_call.get(result_id)
        if called_at is not None and called_at <= index:
            why = "answers a call that already has a result"
            problems.append((index, f"item {index}: tool result {result_id!r} {why}"))
        elif called_at is not None:
            problems.append(
                (index, f"item {index}: tool result {result_id!r} comes before its call")
            )
        else:
            problems.append(
                (index, f"item {index}: tool result {result_id!r} has no matching tool call")
            )
    ordered = [text for _, text in sorted(problems, key=lambda p: p[0])]
    pending = frozenset(pending_ids)
    ordered += [
        f"item {index}: tool call {call_id!r} is never answered"
        for call_id, index in pairing.unanswered
        if call_id not in pending
    ]
    return ordered
