"""Memory requests within the window of the model they go to.

The summariser and the consolidation send their requests to a model of their own (usually the
compactor's). A request must fit that model's window, with room for the answer: at most
:data:`INPUT_SHARE` of it, as the compactor's requests (see :mod:`copaw_context.core.summary.llm`).
Larger input is staged: split into parts that each fit, one request per part.
"""

from __future__ import annotations

from collections.abc import Sequence

from copaw_context.core.tokens import TokenCounter

__all__ = ["INPUT_SHARE", "MIN_ROOM_TOKENS", "group_to_fit", "request_budget"]

INPUT_SHARE = 0.6  # of the window; the rest is room for the answer
MIN_ROOM_TOKENS = 256


def request_budget(model: object, max_input_tokens: int | None) -> int | None:
    """Tokens a request may have: :data:`INPUT_SHARE` of the smaller of ``max_input_tokens``
    and the model's own ``context_size`` (when it has one); ``None`` when neither is known."""
    sizes = [max_input_tokens] if max_input_tokens else []
    context_size = getattr(model, "context_size", None)
    if isinstance(context_size, int) and not isinstance(context_size, bool) and context_size > 0:
        sizes.append(context_size)
    if not sizes:
        return None
    return max(MIN_ROOM_TOKENS, int(min(sizes) * INPUT_SHARE))


def group_to_fit(items: Sequence[str], room: int, counter: TokenCounter) -> list[list[int]]:
    """Consecutive groups of the indexes of ``items`` whose texts together count at most
    ``room`` tokens (an item larger than ``room`` is a group of its own)."""
    groups: list[list[int]] = []
    used = 0
    for index, item in enumerate(items):
        size = counter.count(item) + 2
        if groups and used + size <= room:
            groups[-1].append(index)
            used += size
        else:
            groups.append([index])
            used = size
    return groups
