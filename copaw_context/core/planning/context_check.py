"""A standalone split of any context source: which blocks of which message to compact, and
which to keep (the design card's ``context_check``; the engine does the same per step).
:class:`MessageSplitter` does it over a host's list of messages (``AsMsgHandler`` on 2.x)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from copaw_context.core.context.ledger import Ledger, TokenMeter
from copaw_context.core.host.protocol import ContextSource, MessageView
from copaw_context.core.host.views import ThinkingSent
from copaw_context.core.planning.split import SplitPlan, plan_split
from copaw_context.core.tokens import TokenCounter

__all__ = ["ContextCheck", "MessageSplit", "MessageSplitter", "plan_context"]

M = TypeVar("M")


@dataclass(frozen=True)
class MessageSplit:
    """Block indices of one message on each side of the split (both empty: no blocks)."""

    compact: list[int]
    keep: list[int]


def plan_context(
    source: ContextSource,
    meter: TokenMeter,
    *,
    threshold_tokens: int,
    reserve_tokens: int,
    fixed_tokens: int = 0,
    force: bool = False,
    ledger: Ledger | None = None,
) -> tuple[SplitPlan, list[MessageSplit]]:
    """Plan a pair-safe split of ``source`` (see :func:`plan_split` for the rules); per
    message, the blocks compacted and kept. No tool is exempt from the count. A ``ledger``
    kept from an earlier call over the same messages counts only what is new or changed
    (the source's part objects are compared with those it last saw)."""
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
    splits = [MessageSplit([], []) for _ in range(len(ledger.messages))]  # synced above
    for index in plan.compact:
        message, block = refs[index]
        splits[message].compact.append(block)
    for index in plan.keep:
        message, block = refs[index]
        splits[message].keep.append(block)
    return plan, splits


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
        plan, splits = plan_context(
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
        for msg, split in zip(context, splits, strict=True):
            if split.compact and not split.keep:
                to_compact.append(msg)
            elif split.keep and not split.compact:
                to_keep.append(msg)
            elif split.compact and split.keep:
                to_compact.append(self.with_blocks(msg, split.compact, kept=False))
                to_keep.append(self.with_blocks(msg, split.keep, kept=True))
        return ContextCheck(plan, to_compact, to_keep)


class _Messages(Generic[M]):
    """The session surface the ledger needs, over a plain list of messages."""

    def __init__(self, splitter: MessageSplitter[M], messages: Sequence[M]) -> None:
        self.splitter = splitter
        self.messages = messages

    def fingerprint(self, start: int = 0) -> list[tuple[str, int]]:
        return [self.splitter.fingerprint(m) for m in self.messages[start:]]

    def context_key(self) -> None:
        return None  # a list handed over once: nothing to reuse

    def part_objects(self, start: int = 0) -> list[Sequence[object]] | None:
        blocks = [self.splitter.blocks(m) for m in self.messages[start:]]
        if None in blocks:
            return None  # not known: the fingerprints alone
        return blocks  # type: ignore[return-value]  # no None in it

    def view(self, index: int, first_part: int = 0) -> MessageView:
        return self.splitter.view(self.messages[index], first_part)
