"""The ledger's messages as the split planner's items: one item per user request, one per part
of every other message, with the pairing facts the planner needs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from copaw_context.core.planning.pair_repair import SYNTHETIC_RESULT_TOKENS
from copaw_context.core.planning.pairing import pair_by_occurrence
from copaw_context.core.planning.split import SplitItem
from copaw_context.core.tokens.meter import MESSAGE_OVERHEAD_TOKENS

__all__ = ["split_items"]


class _Part(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def call_id(self) -> str | None: ...
    @property
    def tokens(self) -> int: ...
    @property
    def unfinished(self) -> bool: ...
    @property
    def unseen(self) -> bool: ...


class _Message(Protocol):
    @property
    def is_request(self) -> bool: ...
    @property
    def tokens(self) -> int: ...
    @property
    def pinned(self) -> bool: ...
    @property
    def parts(self) -> Sequence[_Part]: ...


def split_items(messages: Sequence[_Message]) -> tuple[list[SplitItem], list[tuple[int, int]]]:
    """The context as split items and their (message, part) positions.

    A user message is one item (part -1); every part of other messages is an item, so a
    plan can cut through an assistant message and keep tool calls with their results
    wherever they sit (AgentScope 1.x keeps results in separate system messages).
    """
    answered = _answered_calls(messages)
    last_request = max((i for i, m in enumerate(messages) if m.is_request), default=-1)
    items: list[SplitItem] = []
    refs: list[tuple[int, int]] = []
    for mi, message in enumerate(messages):
        if message.is_request:
            items.append(SplitItem(mi, message.tokens, is_user_request=True, pinned=message.pinned))
            refs.append((mi, -1))
            continue
        for pi, part in enumerate(message.parts):
            tokens = part.tokens + (MESSAGE_OVERHEAD_TOKENS if pi == 0 else 0)
            calls = results = frozenset[str]()
            unfinished = False
            if part.kind == "tool_call" and part.call_id is not None:
                calls = frozenset({part.call_id})
                if (mi, pi) not in answered:  # the input answers it (pair_repair)
                    tokens += SYNTHETIC_RESULT_TOKENS
                # A call without a result is unfinished (its result is coming: running,
                # awaiting confirmation) only in the current turn; once a later request
                # came it is abandoned (an interrupted turn, a killed run): the planner
                # compacts it and the model input answers it meanwhile (pair_repair).
                unfinished = (mi, pi) not in answered and mi > last_request
            elif part.kind == "tool_result" and part.call_id is not None:
                results = frozenset({part.call_id})
                unfinished = part.unfinished
            items.append(
                SplitItem(
                    mi,
                    tokens,
                    call_ids=calls,
                    result_ids=results,
                    # The model must see a result once before it may be compacted.
                    pinned=message.pinned or part.unseen,
                    unfinished=unfinished,
                )
            )
            refs.append((mi, pi))
        if not message.parts:
            items.append(SplitItem(mi, message.tokens, pinned=message.pinned))
            refs.append((mi, -1))
    return items, refs


def _answered_calls(messages: Sequence[_Message]) -> set[tuple[int, int]]:
    """Positions of tool calls that have a finished result later on (paired by occurrence,
    so servers that reuse ids such as ``call_0`` on every turn are handled)."""
    positions: list[tuple[int, int]] = []
    sequence: list[tuple[frozenset[str], frozenset[str]]] = []
    for mi, message in enumerate(messages):
        for pi, part in enumerate(message.parts):
            if part.call_id is None:
                continue
            if part.kind == "tool_call":
                sequence.append((frozenset({part.call_id}), frozenset()))
            elif part.kind == "tool_result" and not part.unfinished:
                sequence.append((frozenset(), frozenset({part.call_id})))
            else:
                continue
            positions.append((mi, pi))
    return {positions[call] for _, call, _result in pair_by_occurrence(sequence).pairs}
