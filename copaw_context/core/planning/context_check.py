"""A standalone split of any context source: which blocks of which message to compact, and
which to keep (the design card's ``context_check``; the engine does the same per step).
:class:`MessageSplitter` does it over a host's list of messages (``AsMsgHandler`` on 2.x)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Generic, TypeVar

from copaw_context.core.context.ledger import Ledger, TokenMeter
from copaw_context.core.host.protocol import ContextSource, MessageView
from copaw_context.core.host.views import ThinkingSent
from copaw_context.core.planning.split import SplitPlan, plan_split
from copaw_context.core.tokens import TokenCounter

__all__ = ["ContextCheck", "ContextSplit", "MessageSplit", "MessageSplitter", "plan_context"]

M = TypeVar("M")
_MESSAGE = itemgetter(0)


@dataclass(frozen=True)
class MessageSplit:
    """Block indices of one message on each side of the split (both empty: no blocks)."""

    compact: list[int]
    keep: list[int]


@dataclass(frozen=True)
class ContextSplit:
    """Which messages a plan compacts and keeps (by index; a message with no blocks is one
    item, on one side), and the blocks on each side of a message that is in both."""

    compact: frozenset[int]
    keep: frozenset[int]
    parted: dict[int, MessageSplit]

    def of(self, message: int) -> MessageSplit:
        """The blocks of ``message`` on each side (all of them on its one side when it is
        not parted: ``[]`` stands for that side's whole message)."""
        return self.parted.get(message, MessageSplit([], []))


def _messages_of(refs: Sequence[tuple[int, int]], items: Sequence[int]) -> frozenset[int]:
    """The messages the items at ``items`` belong to."""
    if len(items) < 2:
        return frozenset(refs[i][0] for i in items)
    return frozenset(map(_MESSAGE, itemgetter(*items)(refs)))


def plan_context(
    source: ContextSource,
    meter: TokenMeter,
    *,
    threshold_tokens: int,
    reserve_tokens: int,
    fixed_tokens: int = 0,
    force: bool = False,
    ledger: Ledger | None = None,
) -> tuple[SplitPlan, ContextSplit]:
    """Plan a pair-safe split of ``source`` (see :func:`plan_split` for the rules): which
    messages are compacted, which kept, and the blocks of the few that are cut in two. No
    tool is exempt from the count. A ``ledger`` kept from an earlier call over the same
    messages counts only what is new or changed (the source's part objects are compared
    with those it last saw)."""
    if ledger is None:
        ledger = Ledger()
    ledger.expect_outside_edits()
    ledger.sync(source, meter, lambda _name, _input: False)
    items, refs = ledger.split_items()
    plan = plan_split(
        items,
        threshold_tokens=threshold_tokens,
        reserve_tokens=reserve_tokens,
        fixed_tokens=fixed_tokens,
        force=force,
        index=ledger.split_index(),
    )
    # A plan parts at most a few messages: the sides are two set builds over the items (in
    # C), and only the parted messages get block lists.
    compact, keep = _messages_of(refs, plan.compact), _messages_of(refs, plan.keep)
    parted: dict[int, MessageSplit] = {}
    for message in sorted(compact & keep):
        split = parted[message] = MessageSplit([], [])
        start = bisect_left(refs, (message, -1))
        end = bisect_left(refs, (message + 1, -1), start)
        for index in range(start, end):
            position = bisect_left(plan.compact, index)
            compacted = position < len(plan.compact) and plan.compact[position] == index
            (split.compact if compacted else split.keep).append(refs[index][1])
    return plan, ContextSplit(compact, keep, parted)


@dataclass(frozen=True)
class ContextCheck(Generic[M]):
    """What :meth:`MessageSplitter.context_check` decided."""

    plan: SplitPlan
    to_compact: list[M]
    to_keep: list[M]


class MessageSplitter(ABC, Generic[M]):
    """Plans a pair-safe split of a host's list of messages (the standalone form of what the
    engine does each step). An adapter says how its messages read and are cut in two."""

    def __init__(self, counter: TokenCounter, *, count_thinking: ThinkingSent = True) -> None:
        self.meter = TokenMeter(counter)
        self.count_thinking = count_thinking
        self._ledger = Ledger()  # kept between calls: a call counts what is new or changed

    @abstractmethod
    def fingerprint(self, msg: M) -> tuple[str, int]:
        """The message's id and number of parts."""

    @abstractmethod
    def view(self, msg: M, first_part: int = 0) -> MessageView:
        """The message as the engine sees it (thinking counted by :attr:`count_thinking`)."""

    def blocks(self, msg: M) -> Sequence[object] | None:
        """The message's blocks as the host's own objects (a block replaced in place is then
        counted again); ``None``: not known, a message is trusted by its fingerprint."""
        return None

    def fingerprints(self, messages: Sequence[M]) -> list[tuple[str, int]]:
        """:meth:`fingerprint` of each message (a host may do it in one pass)."""
        return [self.fingerprint(m) for m in messages]

    def block_lists(self, messages: Sequence[M]) -> list[Sequence[object] | None]:
        """:meth:`blocks` of each message (a host may do it in one pass)."""
        return [self.blocks(m) for m in messages]

    @abstractmethod
    def with_blocks(self, msg: M, blocks: Sequence[int], *, kept: bool) -> M:
        """A copy of ``msg`` holding only ``blocks`` (same id), on the kept side or not."""

    def context_check(
        self,
        context: Sequence[M],
        *,
        threshold_tokens: int,
        reserve_tokens: int,
        fixed_tokens: int = 0,
        force: bool = False,
    ) -> ContextCheck[M]:
        """Decide what to compact and what to keep (see :func:`plan_split` for the rules)."""
        plan, split = plan_context(
            _Messages(self, context),
            self.meter,
            threshold_tokens=threshold_tokens,
            reserve_tokens=reserve_tokens,
            fixed_tokens=fixed_tokens,
            force=force,
            ledger=self._ledger,
        )
        to_compact: list[M] = []
        to_keep: list[M] = []
        compact, keep, parted = split.compact, split.keep, split.parted
        for index, msg in enumerate(context):
            if index in parted:
                blocks = parted[index]
                to_compact.append(self.with_blocks(msg, blocks.compact, kept=False))
                to_keep.append(self.with_blocks(msg, blocks.keep, kept=True))
            elif index in compact:
                to_compact.append(msg)
            elif index in keep:
                to_keep.append(msg)
        return ContextCheck(plan, to_compact, to_keep)


class _Messages(Generic[M]):
    """The session surface the ledger needs, over a plain list of messages."""

    def __init__(self, splitter: MessageSplitter[M], messages: Sequence[M]) -> None:
        self.splitter = splitter
        self.messages = messages

    def fingerprint(self, start: int = 0) -> list[tuple[str, int]]:
        return self.splitter.fingerprints(self.messages[start:] if start else self.messages)

    def context_key(self) -> None:
        return None  # a list handed over once: nothing to reuse

    def part_objects(self, start: int = 0) -> list[Sequence[object]] | None:
        blocks = self.splitter.block_lists(self.messages[start:] if start else self.messages)
        if None in blocks:
            return None  # not known: the fingerprints alone
        return blocks  # type: ignore[return-value]  # no None in it

    def view(self, index: int, first_part: int = 0) -> MessageView:
        return self.splitter.view(self.messages[index], first_part)
