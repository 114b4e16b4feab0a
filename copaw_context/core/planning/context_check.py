"""A standalone split of any context source: which blocks of which message to compact, and
which to keep (the design card's ``context_check``; the engine does the same per step)."""

from __future__ import annotations

from dataclasses import dataclass

from copaw_context.core.context.ledger import Ledger, TokenMeter
from copaw_context.core.host.protocol import ContextSource
from copaw_context.core.planning.split import SplitPlan, plan_split

__all__ = ["MessageSplit", "plan_context"]


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
) -> tuple[SplitPlan, list[MessageSplit]]:
    """Plan a pair-safe split of ``source`` (see :func:`plan_split` for the rules); per
    message, the blocks compacted and kept. No tool is exempt from the count."""
    ledger = Ledger()
    ledger.sync(source, meter, lambda _name, _input: False)
    items, refs = ledger.split_items()
    plan = plan_split(
        items,
        threshold_tokens=threshold_tokens,
        reserve_tokens=reserve_tokens,
        fixed_tokens=fixed_tokens,
        force=force,
    )
    splits = [MessageSplit([], []) for _ in range(len(source.fingerprint()))]
    for index in plan.compact:
        message, block = refs[index]
        splits[message].compact.append(block)
    for index in plan.keep:
        message, block = refs[index]
        splits[message].keep.append(block)
    return plan, splits
