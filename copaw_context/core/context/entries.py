"""What the ledger remembers of each context message and part, and the context as the items
a split is planned over (:func:`split_items`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from copaw_context.core.host.protocol import PartKind, Role
from copaw_context.core.planning.pair_repair import SYNTHETIC_RESULT_TOKENS
from copaw_context.core.planning.pairing import pair_by_occurrence
from copaw_context.core.planning.split import SplitItem
from copaw_context.core.tokens.meter import MESSAGE_OVERHEAD_TOKENS

__all__ = ["MessageEntry", "PartEntry", "call_ids", "split_items"]


@dataclass(slots=True)
class PartEntry:
    """What the engine remembers of one part."""

    kind: PartKind
    tokens: int
    nbytes: int
    call_id: str | None = None
    unfinished: bool = False
    exempt: bool = False
    pruned_to: int | None = None
    unseen: bool = False
    data: int = 0
    offloads: frozenset[str] = frozenset()  # offload file names its text references


@dataclass(slots=True)
class MessageEntry:
    """What the engine remembers of one message; ``tokens``/``nbytes`` are its sums."""

    fingerprint: tuple[str, int]
    role: Role
    pinned: bool
    parts: list[PartEntry] = field(default_factory=list)
    tokens: int = MESSAGE_OVERHEAD_TOKENS
    nbytes: int = 0
    data: int = 0
    """Data blocks (images, audio, PDF) in it."""

    @property
    def is_request(self) -> bool:
        """A message the user typed: role ``user`` carrying no tool call or result. A 1.x
        ``Msg(role="user")`` holding tool results (ReMe's layout, loaded histories) is paired
        by block like any other message, so its result never stays without its call."""
        return self.role == "user" and not any(
            p.call_id is not None and p.kind in ("tool_call", "tool_result") for p in self.parts
        )

    def recount(self) -> None:
        self.tokens = MESSAGE_OVERHEAD_TOKENS + sum(p.tokens for p in self.parts)
        self.nbytes = sum(p.nbytes for p in self.parts)
        self.data = sum(p.data for p in self.parts)


def split_items(
    messages: Sequence[MessageEntry],
) -> tuple[list[SplitItem], list[tuple[int, int]]]:
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


def call_ids(message: MessageEntry) -> list[tuple[str, str]]:
    """``(kind, call id)`` of each part of ``message`` that has a call id, in order."""
    return [(p.kind, p.call_id) for p in message.parts if p.call_id is not None]


def _answered_calls(messages: Sequence[MessageEntry]) -> set[tuple[int, int]]:
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
