"""Per-message state kept between steps, so a step only looks at what changed.

The ledger holds, for every context message, its fingerprint (from the host: its id and its
parts as the host's objects, see :mod:`~copaw_context.core.context.fingerprint`), its role and
its parts' token counts, byte sizes and tool pairing data. :meth:`Ledger.sync` compares the
host's fingerprints with the stored ones and views only messages that are new or changed, and
of a changed message only the parts that changed (a part replaced in place by the host or
another middleware, the new parts of a message that grew): a step costs about the new
content, not the whole context (what an entry holds: :mod:`.ledger_entries`). The engine
updates the entries it edits itself (pruning, request cuts).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from copaw_context.core.context.file_counts import OffloadCounts
from copaw_context.core.context.fingerprint import (
    REPLACED,
    SAME,
    Parts,
    changed_messages,
    kept,
    reusable_entry,
    reused_parts,
    spare_entries,
)
from copaw_context.core.context.ledger_entries import (
    Calls,
    ExemptCheck,
    MessageEntry,
    PartEntry,
    call_ids,
    message_entry,
    offloads_of,
    part_entries,
    pruned_to,
)
from copaw_context.core.context.ledger_split import split_items
from copaw_context.core.host.protocol import ContextSource, PartView
from copaw_context.core.host.views import pins_made
from copaw_context.core.planning.pairing import OpenCalls
from copaw_context.core.planning.units import SplitIndex, SplitItem, index_items
from copaw_context.core.tokens.meter import (
    BLOCK_OVERHEAD_TOKENS,
    DATA_BLOCK_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    TokenMeter,
)

# TokenMeter and the overhead constants live in token_meter; kept here for old imports.
__all__ = [
    "BLOCK_OVERHEAD_TOKENS",
    "DATA_BLOCK_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "Ledger",
    "MessageEntry",
    "PartEntry",
    "TokenMeter",
]


SplitItems = tuple[list[SplitItem], list[tuple[int, int]]]
"""The split items of the context and their (message, part) positions."""

_FULL_CHECK_EVERY = 64  # steps between full fingerprint checks on the fast path


class Ledger:
    """The engine's memory of one agent's context (a cache: rebuilt after a restart).

    Sums (tokens, bytes, data blocks) and the positions of tool results are kept up to date
    as entries change, so reading them does not walk the context.
    """

    def __init__(self) -> None:
        self.messages: list[MessageEntry] = []
        self.tokens = 0
        self.nbytes = 0
        self.data = 0
        self._offloads = OffloadCounts()
        self._fingerprints: list[tuple[str, int]] = []
        self._parts: list[Parts] = []  # per message, its part objects when last viewed
        self._calls: Calls = {}
        self._results: list[tuple[int, int]] = []
        self.settled = 0
        """How many of the oldest results stage 2 has cut to their old limit (not looked at
        again)."""
        self.unseen: set[tuple[int, int]] = set()
        """Positions of results the model has not seen yet."""
        self._key: tuple[int, int] | None = None
        self._fast_steps = 0
        self._look: int | None = 0
        """Where the next sync compares part objects from: 0 every message, -1 the newest,
        None only those of messages that grew."""
        self._open = OpenCalls()  # folds all messages but the last (which may grow)
        self._changes = 0  # counts every change of an entry: the split items' cache key
        self._first_change = 0  # the lowest index changed since take_first_change()
        self._pins = pins_made()  # pin_message calls seen: another count reads the pins again
        self._split: tuple[int, SplitItems, SplitIndex] | None = None

    def expect_outside_edits(self, *, everywhere: bool = True) -> None:
        """The next :meth:`sync` compares the part objects of every message (``everywhere``;
        the host or another middleware may have replaced a part anywhere since), or of the
        newest one. The engine calls this once per host event: a step, a command, a report;
        the syncs in between see only the engine's own edits."""
        self._look = 0 if everywhere or self._look == 0 else -1

    def sync(self, host: ContextSource, meter: TokenMeter, exempt: ExemptCheck) -> int:
        """Bring the ledger up to date with the host; return the first index that changed.

        When the host names its context container (``context_key``: its identity and length)
        and it is the same container, only grown, just its tail is fingerprinted. After
        :meth:`expect_outside_edits` the part objects of every message (or of the newest) are
        compared with those last viewed: of a message that kept its id only the parts that
        are other objects now are viewed and counted again (of one that grew, also its new
        parts and its last known one).
        """
        first = self._sync(host, meter, exempt)
        if self._pins != pins_made():
            self._pins = pins_made()
            self._read_pins(host)
        return first

    def _sync(self, host: ContextSource, meter: TokenMeter, exempt: ExemptCheck) -> int:
        start = self._fast_start(host)
        pending, self._look = self._look, None
        current = list(host.fingerprint(start)) if start else list(host.fingerprint())
        old = self._fingerprints[start:]
        first = start + len(old)
        if current[: len(old)] != old:
            differs = (i for i, (a, b) in enumerate(zip(current, old, strict=False)) if a != b)
            first = start + next(differs, min(len(current), len(old)))
        elif pending is None and len(current) == len(old):
            return first  # nothing grew, and no look at the parts was asked for
        look = min(first, 0 if pending == 0 else max(0, len(self._fingerprints) - 1))
        objects = host.part_objects(look)
        changed = [] if objects is None else changed_messages(objects, self._parts, look, first)
        for index in changed:
            fingerprint = (self._fingerprints[index][0], len((objects or ())[index - look]))
            if not self._edit(host, meter, exempt, index, fingerprint, objects, look):
                start = first = index  # another message in its place: view all from there
                current = list(host.fingerprint(start))
                break
        else:
            if first - start == len(old) == len(current):
                return first
        self._apply(host, meter, exempt, first, current[first - start :], objects, look)
        return first

    def _read_pins(self, host: ContextSource) -> None:
        """Take over pins set on messages already counted (a view without parts each)."""
        for index, entry in enumerate(self.messages):  # in sync with the host: just synced
            view = host.view(index, len(entry.parts))
            if view.msg_id == entry.fingerprint[0] and view.pinned != entry.pinned:
                entry.pinned = view.pinned
                self._changes += 1

    def _fast_start(self, host: ContextSource) -> int:
        key = host.context_key()
        previous, self._key = self._key, key
        if key is None or previous is None or key[0] != previous[0] or key[1] < previous[1]:
            self._fast_steps = 0
            return 0
        self._fast_steps += 1
        if self._fast_steps >= _FULL_CHECK_EVERY:  # a check of everything now and then
            self._fast_steps = 0
            self._look = 0
            return 0
        return max(0, len(self._fingerprints) - 1)

    def _apply(
        self,
        host: ContextSource,
        meter: TokenMeter,
        exempt: ExemptCheck,
        first: int,
        fingerprints: list[tuple[str, int]],
        objects: Sequence[Sequence[object]] | None,
        look: int,
    ) -> None:
        """Replace the entries from ``first`` on (``fingerprints`` are theirs, ``objects``
        the part objects of the messages from ``look`` on)."""
        old = self._fingerprints
        if (  # the same message, grown or shrunk: its changed parts only
            first < len(old)
            and fingerprints
            and fingerprints[0][0] == old[first][0]
            and self._edit(host, meter, exempt, first, fingerprints[0], objects, look)
        ):
            first, fingerprints = first + 1, fingerprints[1:]
        spare = spare_entries(self.messages[first:], self._parts[first:]) if objects else {}
        self._drop_from(first)
        for offset, fingerprint in enumerate(fingerprints):
            index = first + offset
            entry = reusable_entry(spare, fingerprint, objects, index - look)
            if entry is None:
                view = host.view(index, 0)
                entry = message_entry(fingerprint, view, meter, exempt, self._calls)
            self.messages.append(entry)
            self._add(entry)
            self._index_results(index)
        self._fingerprints[first:] = fingerprints
        self._parts[first:] = (
            [
                kept(objects[i - look]) if 0 <= i - look < len(objects) else None
                for i in range(first, first + len(fingerprints))
            ]
            if objects is not None
            else [None] * len(fingerprints)
        )

    def _edit(
        self,
        host: ContextSource,
        meter: TokenMeter,
        exempt: ExemptCheck,
        index: int,
        fingerprint: tuple[str, int],
        objects: Sequence[Sequence[object]] | None,
        look: int,
    ) -> bool:
        """Message ``index`` kept its id (``fingerprint`` is its new one, ``objects`` the
        part objects from message ``look`` on): view and count again only its changed
        parts. False: another message is in its place (nothing changed)."""
        entry = self.messages[index]
        parts = None if objects is None or index - look >= len(objects) else objects[index - look]
        was, now = self._fingerprints[index][1], fingerprint[1]
        states = reused_parts(self._parts[index], parts, was, now)
        first = next((i for i, state in enumerate(states) if state != SAME), len(states))
        view = host.view(index, first)
        if view.msg_id != fingerprint[0]:
            return False
        if len(view.parts) != len(states) - first:  # the view disagrees: count it all again
            first, view = 0, host.view(index, 0)
            states = [REPLACED] * len(view.parts)
        reused = [state == SAME for state in states[first:]]
        fresh = iter(part_entries(view.parts, meter, exempt, self._calls, reused))
        ids = call_ids(entry)
        self._subtract(entry)
        self._first_change = min(self._first_change, index)
        kept_entries = entry.parts[:first]
        for offset, state in enumerate(states[first:], first):
            if state == SAME:
                kept_entries.append(entry.parts[offset])
                continue
            kept_entries.append(part := next(fresh))
            if state == REPLACED:  # another part: what was cut of the old one does not hold
                part.pruned_to = None
        old_results = [p for p, part in enumerate(entry.parts) if part.kind == "tool_result"]
        entry.parts = kept_entries
        entry.role, entry.pinned = view.role, view.pinned
        entry.fingerprint = self._fingerprints[index] = fingerprint
        self._parts[index] = kept(parts)
        entry.recount()
        self._add(entry)
        if index < self._open.folded and call_ids(entry) != ids:
            self._open = OpenCalls()
        self._reindex_results(index, old_results, first)
        return True

    def _reindex_results(self, index: int, old: list[int], first: int) -> None:
        """Message ``index`` changed from part ``first`` on (``old``: where its results were):
        its result positions and unseen flags again, and stage 2 looks again from the first
        result that changed."""
        low = bisect_left(self._results, (index, -1))
        new = [p for p, part in enumerate(self.messages[index].parts) if part.kind == "tool_result"]
        self._results[low : low + len(old)] = [(index, p) for p in new]
        kept_before = sum(1 for p in new if p < first)
        if kept_before < max(len(old), len(new)):
            self.settled = min(self.settled, low + kept_before)
        self.unseen = {r for r in self.unseen if r[0] != index}
        parts = self.messages[index].parts
        self.unseen.update((index, p) for p in new if parts[p].unseen)

    def _drop_from(self, index: int) -> None:
        self._first_change = min(self._first_change, index)  # and what is appended after
        for entry in self.messages[index:]:
            self._subtract(entry)
        del self.messages[index:]
        self._forget_results_from(index)

    def _forget_results_from(self, index: int) -> None:
        """Drop the result positions of messages ``index`` and later (positions are sorted)."""
        if index < self._open.folded:
            self._open = OpenCalls()
        del self._results[bisect_left(self._results, (index, -1)) :]
        self.settled = min(self.settled, len(self._results))
        if any(r[0] >= index for r in self.unseen):
            self.unseen = {r for r in self.unseen if r[0] < index}

    def _add(self, entry: MessageEntry) -> None:
        self._changes += 1
        self.tokens += entry.tokens
        self.nbytes += entry.nbytes
        self.data += entry.data
        self._offloads.add(entry)

    def _subtract(self, entry: MessageEntry) -> None:
        self._changes += 1
        self.tokens -= entry.tokens
        self.nbytes -= entry.nbytes
        self.data -= entry.data
        self._offloads.remove(entry)

    def _index_results(self, index: int) -> None:
        for part, entry in enumerate(self.messages[index].parts):
            if entry.kind == "tool_result":
                self._results.append((index, part))
                if entry.unseen:
                    self.unseen.add((index, part))

    def reset(self) -> None:
        """Forget everything (the host context was replaced)."""
        self.messages.clear()
        self.tokens = self.nbytes = self.data = 0
        self._offloads = OffloadCounts()
        self._fingerprints = []
        self._parts = []
        self._calls.clear()
        self._results = []
        self.settled = 0
        self.unseen = set()
        self._key = None
        self._look = 0
        self._open = OpenCalls()
        self._changes += 1
        self._first_change = 0
        self._split = None

    def take_first_change(self) -> int:
        """The lowest index of a message whose entry (fingerprint, parts, counts) changed,
        was added or was dropped since the previous call (the number of messages when none
        did); one consumer's mark (the prompt-cache figure's)."""
        first, self._first_change = self._first_change, len(self.messages)
        return min(first, len(self.messages))

    def total(self) -> tuple[int, int]:
        """(tokens, bytes) of every message."""
        return self.tokens, self.nbytes

    def update_part(self, index: int, part: int, view: PartView, meter: TokenMeter) -> None:
        """Re-measure one part the engine changed."""
        message = self.messages[index]
        entry = message.parts[part]
        self._subtract(message)
        self._first_change = min(self._first_change, index)
        entry.tokens, entry.nbytes = meter.part(view)
        entry.data = view.data_blocks
        entry.offloads = offloads_of(view)
        self.update_meta(index, part, view)
        message.recount()
        self._add(message)

    def update_meta(self, index: int, part: int, view: PartView) -> None:
        """Take over a part's changed bookkeeping (cut limit, seen) when its text did not change."""
        self._changes += 1
        entry = self.messages[index].parts[part]
        entry.pruned_to = pruned_to(view)
        entry.unseen = bool(view.meta.get("unseen"))
        if entry.unseen:
            self.unseen.add((index, part))
        else:
            self.unseen.discard((index, part))

    def offload_names(self) -> set[str]:
        """The offload file names every part's text references (no view of the host; kept
        as parts come and go: this costs the number of names, not of parts)."""
        return self._offloads.names()

    def results(self) -> Sequence[tuple[int, int]]:
        """Positions (message, part) of every tool result, oldest first (do not modify)."""
        return self._results

    def unanswered_calls(self) -> int:
        """Tool calls no result answers (paired by occurrence): the model input gets a
        synthetic result for each (see :mod:`~copaw_context.core.planning.pair_repair`). Folded
        incrementally: a step costs about its new parts."""
        last = len(self.messages) - 1
        while self._open.folded < last:
            self._open.fold(call_ids(self.messages[self._open.folded]))
        return self._open.count(call_ids(self.messages[last]) if last >= self._open.folded else [])

    def split_items(self) -> SplitItems:
        """The context as split items and their (message, part) positions (see
        :func:`~copaw_context.core.context.ledger_split.split_items`); made again only after
        an entry changed (do not modify)."""
        return self._split_cache()[1]

    def split_index(self) -> SplitIndex:
        """The :class:`~copaw_context.core.planning.units.SplitIndex` of :meth:`split_items`
        (pass it to ``plan_split``): kept with the items."""
        return self._split_cache()[2]

    def _split_cache(self) -> tuple[int, SplitItems, SplitIndex]:
        if self._split is None or self._split[0] != self._changes:
            made = split_items(self.messages)
            self._split = (self._changes, made, index_items(made[0]))
        return self._split
