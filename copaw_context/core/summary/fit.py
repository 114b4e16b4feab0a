"""Fitting a summary into its budget: old items out first, then long items cut.

:func:`fit_to_budget` is the one fit of a compaction: to the budget's cap in characters and
its room in tokens at once (see :class:`~.budget.SummaryBudget`).
"""

from __future__ import annotations

import heapq
import re
from collections import deque
from collections.abc import Callable

from copaw_context.core.markdown_blocks import fence_closer
from copaw_context.core.summary.budget import SummaryBudget
from copaw_context.core.summary.carry import EXACT_RE, READ_FILE_RE, REQUEST_RE, flatten_carried
from copaw_context.core.summary.language import WORDS, Language, check_language, word_pattern
from copaw_context.core.summary.markdown import item_key
from copaw_context.core.summary.merge import union_items
from copaw_context.core.summary.message import split_summary_message
from copaw_context.core.summary.model import ITEM_KEYS, Summary
from copaw_context.core.summary.verbatim import cut

__all__ = ["fit", "fit_summary", "fit_to_budget", "trim"]

_REFITS = 4  # cuts after the first: each one lands closer, as the density converges

# Constraints may fill at most this share of max_chars before the oldest are left out.
_CONSTRAINT_SHARE = 3
# Items copied mechanically from the messages (requests, files, errors, tool outcomes): the
# dialog archive holds them word for word, unlike what a model or the user wrote.
_COPIED_RE = re.compile(
    rf"(?:{word_pattern('request')})(?: \([^()\n]*\))?(?:: |：)"
    r"|[^\s:()]+(?:\([^\n]*?\))?: ok(?: — |$)"
)
# A saved full output of a failed run (``File: .../tool_result/<32 hex>.txt``): its notice
# and the archive name it, ``memory_search`` finds its text.
_SAVED_RE = re.compile(rf"(?:{word_pattern('file')})(?:: |：)\S*[0-9a-f]{{32}}\.txt$")
_EXACT_SHARE = 4  # of max_chars for each list's exact items before the oldest go
_MIN_PROTECTED_CHARS = 200  # a kept item (the task, the latest request) is cut to no less


def _drop_until_fits(
    summary: Summary,
    lists: Callable[[], list[list[str]]],
    droppable: Callable[[str], bool],
    max_chars: int,
) -> None:
    """Drop the oldest droppable item of the longest of ``lists`` until the summary fits.

    Linear in the number of items (a heap of list sizes, a queue of droppable items per
    list): a megabyte of short lines is trimmed in milliseconds.
    """
    size = len(summary.render())
    while size > max_chars:
        groups = lists()
        # A list's size here is what this pass may drop of it: prose beside exact errors
        # does not make the errors' list the longest.
        totals = [sum(len(i) + 1 for i in items if droppable(i)) for items in groups]
        queues = [deque(k for k, item in enumerate(items) if droppable(item)) for items in groups]
        heap = [(-totals[g], g) for g in range(len(groups)) if queues[g]]
        heapq.heapify(heap)
        dropped: list[set[int]] = [set() for _ in groups]
        while size > max_chars and heap:
            negative, g = heapq.heappop(heap)
            if -negative != totals[g] or not queues[g]:
                continue  # a stale entry: the list shrank since it was pushed
            victim = queues[g].popleft()
            dropped[g].add(victim)
            cost = len(groups[g][victim]) + 1
            totals[g] -= cost
            size -= cost  # an estimate; rendered again once it says the summary fits
            if queues[g]:
                heapq.heappush(heap, (-totals[g], g))
        for items, gone in zip(groups, dropped, strict=True):
            if gone:
                items[:] = [item for k, item in enumerate(items) if k not in gone]
        if not heap and size > max_chars:
            return  # nothing left to drop
        size = len(summary.render())
        if not any(dropped):
            return


def _budget_share(items: list[str], droppable: Callable[[str], bool], limit: int) -> None:
    """Leave out the oldest ``droppable`` items until those fill at most ``limit`` (the
    others, prose beside exact errors, do not count against the share)."""
    excess = sum(len(i) + 1 for i in items if droppable(i)) - limit
    kept: list[str] = []
    for item in items:
        if excess > 0 and droppable(item):
            excess -= len(item) + 1
        else:
            kept.append(item)
    items[:] = kept


def trim(summary: Summary, protected: set[str], max_chars: int) -> Summary:
    """The summary, canonical, with old items left out until it fits ``max_chars``; only the
    items whose :func:`item_key` is in ``protected`` are never left out (they may be cut).

    Constraints keep the newest within a third of ``max_chars``, exact errors and paths the
    newest within a quarter (per list). Then, longest list first and oldest item first, go
    the items copied from the messages (requests, tool outcomes, files only read, saved
    outputs: the archive has them), then any other item but the decisions, exact errors and
    paths; then the protected items are cut (to no less than 200 characters); then go the
    exact errors and paths, the decisions, and last the remaining constraints.
    """
    doc = summary.canonical()
    if len(doc.render()) <= max_chars:
        return doc
    note = "- " + WORDS[doc.language]["trimmed"]
    doc.critical = union_items(doc.critical, [note])
    keep = protected | {item_key(note)}

    def droppable(item: str) -> bool:
        return item_key(item) not in keep

    def exact(item: str) -> bool:
        return EXACT_RE.match(item_key(item)) is not None

    def copied(item: str) -> bool:  # and the files only read, and the saved outputs
        key = item_key(item)
        mechanical = _COPIED_RE.match(key) or READ_FILE_RE.match(key) or _SAVED_RE.match(key)
        return droppable(item) and mechanical is not None

    def ordinary(item: str) -> bool:
        return droppable(item) and not exact(item)

    def others() -> list[list[str]]:
        lists = [doc.preamble, doc.goal, doc.progress_notes, doc.next_steps]
        lists += [doc.critical, doc.done, doc.in_progress, doc.blocked]
        return lists + [block.items for block in (*doc.progress_other, *doc.other)]

    constraints = doc.constraints
    _budget_share(constraints, droppable, max_chars // _CONSTRAINT_SHARE)
    for items in (doc.critical, doc.blocked):  # the newest exact errors and paths, a share
        _budget_share(items, lambda i: droppable(i) and exact(i), max_chars // _EXACT_SHARE)
    _drop_until_fits(doc, others, copied, max_chars)
    _drop_until_fits(doc, others, ordinary, max_chars)
    doc.progress_other = [block for block in doc.progress_other if block.items]
    doc.other = [block for block in doc.other if block.items]
    keep |= _cut_protected(doc, [*others(), doc.decisions], keep, max_chars)
    _drop_until_fits(doc, others, droppable, max_chars)
    _drop_until_fits(doc, lambda: [doc.decisions], droppable, max_chars)
    _drop_until_fits(doc, lambda: [constraints], droppable, max_chars)
    return doc


def _cut_protected(
    doc: Summary, lists: list[list[str]], protected: set[str], max_chars: int
) -> set[str]:
    """Cut the long protected items (longest first) until the summary fits or each is down
    to :data:`_MIN_PROTECTED_CHARS`; returns the keys of the cut items."""
    excess = len(doc.render()) - max_chars
    cut_keys: set[str] = set()
    spots = [
        (len(item), items, k)
        for items in lists
        for k, item in enumerate(items)
        if item_key(item) in protected and len(item) > _MIN_PROTECTED_CHARS
    ]
    for size, items, k in sorted(spots, key=lambda spot: -spot[0]):
        if excess <= 0:
            break
        shorter = _cut_item(items[k], max(_MIN_PROTECTED_CHARS, size - excess - 60))
        excess -= len(items[k]) - len(shorter)
        items[k] = shorter
        cut_keys.add(item_key(shorter))
    return cut_keys


def _cut_item(item: str, limit: int) -> str:
    if len(item) <= limit:
        return item
    text = cut(item, limit)
    closer = fence_closer(text)
    if closer:
        text += "\n  " + closer  # a cut inside a code block must not swallow later headings
    return text


def _with_items_cut(summary: Summary, limit: int) -> Summary:
    def each(items: list[str]) -> list[str]:
        return [_cut_item(item, limit) for item in items]

    update: dict[str, object] = {key: each(summary.items(key)) for key in ITEM_KEYS}
    for name in ("progress_other", "other"):
        blocks = getattr(summary, name)
        update[name] = [block.model_copy(update={"items": each(block.items)}) for block in blocks]
    return summary.model_copy(update=update)


def _shrink(summary: Summary, max_chars: int) -> Summary:
    doc = flatten_carried(summary.canonical())
    goal = doc.goal
    asked = [i for i in goal if REQUEST_RE.match(item_key(i))][:1]  # the user's own task
    kept = goal[:1] + goal[-1:] + asked + doc.next_steps[-1:]  # the task, what is still open
    doc = trim(doc, {item_key(item) for item in kept}, max_chars)
    if len(doc.render()) <= max_chars:
        return doc
    low, high = 0, len(doc.render())  # the longest item length that fits, by bisection
    while low < high:
        middle = (low + high + 1) // 2
        if len(_with_items_cut(doc, middle).render()) <= max_chars:
            low = middle
        else:
            high = middle - 1
    doc = _with_items_cut(doc, max(low, 40))
    text = doc.render()
    if len(text) <= max_chars:
        return doc
    # The last resort cuts the text itself at a line end: what is left is read as a summary.
    return Summary.parse(text[: text.rfind("\n", 0, max_chars) + 1 or max_chars], doc.language)


def fit(summary: Summary, max_chars: int) -> Summary:
    """The summary within ``max_chars`` characters of :meth:`~.model.Summary.text`, whatever
    it holds.

    ``summary`` itself when it fits. Otherwise, canonical: old items are left out as in
    :func:`trim` (items copied from the messages first; the first and the last Goal items,
    the first user request under Goal and the last Next Steps item are kept), then, if the
    kept items alone are too long, every item is cut to one common
    length, and as a last resort the text itself is cut at a line end. No step is
    quadratic: a megabyte of short lines is handled in well under a second.
    """
    return summary if len(summary.text()) <= max_chars else _shrink(summary, max_chars)


def fit_to_budget(summary: Summary, budget: SummaryBudget, count: Callable[[str], int]) -> Summary:
    """The summary within ``budget``: its cap in characters and, when it has a room, its room
    in tokens (``count`` measures the text; the room becomes characters at the summary's own
    characters per token, see :meth:`~.budget.SummaryBudget.limit`). What a cut keeps may be
    denser than the whole (a Chinese item, a hash), so a cut still over the room is cut again
    at its own density, a few times at most, never below the budget's floor."""
    text = summary.text()
    if budget.room is None:
        return fit(summary, budget.cap)
    tokens = count(text)
    limit = budget.limit(len(text), tokens)
    fitted = fit(summary, limit)
    for _ in range(_REFITS):
        if fitted is summary and tokens <= budget.room:
            break
        kept = fitted.text()
        kept_tokens = count(kept)
        if kept_tokens <= budget.room or limit <= budget.floor:
            break
        limit = min(limit - 1, budget.limit(len(kept), kept_tokens))
        fitted = fit(summary, limit)
    return fitted


def fit_summary(summary: str, *, max_chars: int, language: Language = "en") -> str:
    """:func:`fit` for a summary's text (or summary message); the text itself if it fits."""
    language = check_language(language)
    if len(summary) <= max_chars:
        return summary
    return _shrink(Summary.parse(split_summary_message(summary), language), max_chars).text()
