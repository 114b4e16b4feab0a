"""What changed in a context message since the ledger last looked: by its parts' objects.

A host names each message's parts as its own objects (``HostSession.part_objects``: the list
the message holds). The ledger keeps a copy of each message's list (the objects referenced,
not copied), so a part that the host or another middleware replaced by another object is
seen at the next look, and only that part is viewed and counted again. Comparing costs a
pointer comparison per part that stayed the same object (a part replaced by an equal object
is compared by value and counts as the same), done in C for the whole context: no object is
made per message, so a look at 3,000 messages stays well under a millisecond.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, islice
from operator import ne
from typing import Protocol, TypeVar

__all__ = [
    "AGAIN",
    "REPLACED",
    "SAME",
    "Parts",
    "changed_messages",
    "kept",
    "reusable_entry",
    "reused_parts",
    "spare_entries",
]


class _Entry(Protocol):
    @property
    def fingerprint(self) -> tuple[str, int]: ...


E = TypeVar("E", bound=_Entry)

SAME, AGAIN, REPLACED = 0, 1, 2
"""What :func:`reused_parts` says of a part: kept, viewed again, another part now."""

Parts = list[object] | None
"""A message's parts as the ledger keeps them (None: the host does not name them)."""


def kept(parts: Sequence[object] | None) -> Parts:
    """``parts`` as the ledger keeps them: a list of its own (the host's list may change in
    place; the part objects are referenced, not copied)."""
    return None if parts is None else list(parts)


def changed_messages(
    current: Sequence[Sequence[object]], stored: Sequence[Parts], start: int, stop: int
) -> list[int]:
    """Indices in ``[start, stop)`` of the messages whose parts differ from the stored ones;
    ``current`` starts at message ``start``, ``stored`` at message 0 (compared in C)."""
    if stop <= start:
        return []
    return list(compress(range(start, stop), map(ne, current, islice(stored, start, stop))))


def reused_parts(old: Parts, new: Sequence[object] | None, was: int, now: int) -> list[int]:
    """Per part of a message that kept its id and has ``now`` parts (``was`` before): whether
    its entry still holds (:data:`SAME`: the same part object, or an equal one, at the same
    place), the part is another one (:data:`REPLACED`: what the engine recorded of it, such
    as its cut limit, no longer holds), or it is viewed again as it may have grown in place
    (:data:`AGAIN`: the last known part of a message that grew, as a streamed text does; and
    without part objects, every part of a message that shrank)."""
    if old is None or new is None:
        keep = was - 1 if now >= was > 0 else 0
        return [SAME if index < keep else AGAIN for index in range(now)]
    states = [SAME if a is b or a == b else REPLACED for a, b in zip(new, old, strict=False)]
    states = states[:now]
    if now > was and 0 < was <= len(states) and states[was - 1] == SAME:
        states[was - 1] = AGAIN
    return states + [REPLACED] * (now - len(states))


def spare_entries(
    entries: Sequence[E], parts: Sequence[Parts]
) -> dict[tuple[str, int], tuple[E, Parts]]:
    """The ledger entries about to be dropped, by fingerprint, with the part objects they
    were counted from: a message that only moved (the kept tail after a commit) keeps its
    entry instead of being viewed and counted again."""
    spare: dict[tuple[str, int], tuple[E, Parts]] = {}
    for entry, objects in zip(entries, parts, strict=False):
        if objects is not None:
            spare.setdefault(entry.fingerprint, (entry, objects))
    return spare


def reusable_entry(
    spare: dict[tuple[str, int], tuple[E, Parts]],
    fingerprint: tuple[str, int],
    objects: Sequence[Sequence[object]] | None,
    at: int,
) -> E | None:
    """The spare entry of the message at ``at`` of ``objects`` when it holds the very part
    objects that entry was counted from (taken out of ``spare``: used once)."""
    found = spare.get(fingerprint)
    if found is None or objects is None or not 0 <= at < len(objects):
        return None
    entry, parts = found
    current = objects[at]
    if parts is None or len(parts) != len(current):
        return None
    if not all(a is b for a, b in zip(current, parts, strict=True)):
        return None
    del spare[fingerprint]
    return entry
