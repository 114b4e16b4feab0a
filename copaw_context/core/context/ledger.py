"""Per-message state kept between steps, so a step only looks at what changed.

The ledger holds, for every context message, its fingerprint (from the host), its role and
its parts' token counts, byte sizes and tool pairing data. :meth:`Ledger.sync` compares the
host's fingerprints with the stored ones and views only messages that are new or changed
(for a message that grew, only its new parts): a step costs about the new content, not the
whole context. The engine updates the entries it edits itself (pruning, request cuts).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from copaw_context.core.host.protocol import ContextSource, MessageView, PartKind, PartView, Role
from copaw_context.core.planning.pair_repair import SYNTHETIC_RESULT_TOKENS
from copaw_context.core.planning.pairing import OpenCalls, pair_by_occurrence
from copaw_context.core.planning.split import SplitItem
from copaw_context.core.tokens.meter import (
    BLOCK_OVERHEAD_TOKENS,
    DATA_BLOCK_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    TokenMeter,
)
from copaw_context.core.toolresults.offload import referenced_offload_names

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


ExemptCheck = Callable[[str | None, str | None], bool]
"""Whether a result of this tool (name, raw call input) gets the larger limits."""

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
        self._fingerprints: list[tuple[str, int]] = []
        self._calls: dict[str, tuple[str | None, str | None]] = {}
        self._results: list[tuple[int, int]] = []
        self.settled = 0
        """How many of the oldest results stage 2 has cut to their old limit (not looked at
        again)."""
        self.unseen: set[tuple[int, int]] = set()
        """Positions of results the model has not seen yet."""
        self._key: tuple[int, int] | None = None
        self._fast_steps = 0
        self._open = OpenCalls()  # folds all messages but the last (which may grow)

    def sync(self, host: ContextSource, meter: TokenMeter, exempt: ExemptCheck) -> int:
        """Bring the ledger up to date with the host; return the first index that changed.

        When the host names its context container (``context_key``: its identity and length)
        and it is the same container, only grown, just its tail is fingerprinted.
        """
        start = self._fast_start(host)
        current = list(host.fingerprint(start)) if start else list(host.fingerprint())
        old = self._fingerprints[start:]
        first = start + len(old)
        if current[: len(old)] != old:
            differs = (i for i, (a, b) in enumerate(zip(current, old, strict=False)) if a != b)
            first = start + next(differs, min(len(current), len(old)))
        if first - start == len(old) == len(current):
            return first
        self._apply(host, meter, exempt, first, current[first - start :])
        return first

    def _fast_start(self, host: ContextSource) -> int:
        key = host.context_key()
        previous, self._key = self._key, key
        if key is None or previous is None or key[0] != previous[0] or key[1] < previous[1]:
            self._fast_steps = 0
            return 0
        self._fast_steps += 1
        if self._fast_steps >= _FULL_CHECK_EVERY:
            self._fast_steps = 0
            return 0
        return max(0, len(self._fingerprints) - 1)

    def _apply(
        self,
        host: ContextSource,
        meter: TokenMeter,
        exempt: ExemptCheck,
        first: int,
        fingerprints: list[tuple[str, int]],
    ) -> None:
        """Replace the entries from ``first`` on (``fingerprints`` are theirs)."""
        old = self._fingerprints
        grown = (
            first < len(old) and bool(fingerprints) and _same_message(old[first], fingerprints[0])
        )
        self._drop_from(first + 1 if grown else first)
        if grown:
            entry = self.messages[first]
            keep = max(0, len(entry.parts) - 1)
            view = host.view(first, keep)
            self._subtract(entry)
            del entry.parts[keep:]
            entry.parts.extend(self._part_entries(view.parts, meter, exempt))
            entry.fingerprint = fingerprints[0]
            entry.recount()
            self._add(entry)
            self._forget_results_from(first)
            self._index_results(first)
        start = first + 1 if grown else first
        for offset, fingerprint in enumerate(fingerprints[1 if grown else 0 :]):
            index = start + offset
            entry = self._entry(fingerprint, host.view(index, 0), meter, exempt)
            self.messages.append(entry)
            self._add(entry)
            self._index_results(index)
        self._fingerprints[first:] = fingerprints

    def _drop_from(self, index: int) -> None:
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
        self.tokens += entry.tokens
        self.nbytes += entry.nbytes
        self.data += entry.data

    def _subtract(self, entry: MessageEntry) -> None:
        self.tokens -= entry.tokens
        self.nbytes -= entry.nbytes
        self.data -= entry.data

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
        self._fingerprints = []
        self._calls.clear()
        self._results = []
        self.settled = 0
        self.unseen = set()
        self._key = None
        self._open = OpenCalls()

    def total(self) -> tuple[int, int]:
        """(tokens, bytes) of every message."""
        return self.tokens, self.nbytes

    def update_part(self, index: int, part: int, view: PartView, meter: TokenMeter) -> None:
        """Re-measure one part the engine changed."""
        message = self.messages[index]
        entry = message.parts[part]
        self._subtract(message)
        entry.tokens, entry.nbytes = meter.part(view)
        entry.data = view.data_blocks
        entry.offloads = _offloads(view)
        self.update_meta(index, part, view)
        message.recount()
        self._add(message)

    def update_meta(self, index: int, part: int, view: PartView) -> None:
        """Take over a part's changed bookkeeping (cut limit, seen) when its text did not change."""
        entry = self.messages[index].parts[part]
        entry.pruned_to = _pruned_to(view)
        entry.unseen = bool(view.meta.get("unseen"))
        if entry.unseen:
            self.unseen.add((index, part))
        else:
            self.unseen.discard((index, part))

    def offload_names(self) -> set[str]:
        """The offload file names every part's text references (no view of the host)."""
        return {name for m in self.messages for p in m.parts for name in p.offloads}

    def results(self) -> Sequence[tuple[int, int]]:
        """Positions (message, part) of every tool result, oldest first (do not modify)."""
        return self._results

    def unanswered_calls(self) -> int:
        """Tool calls no result answers (paired by occurrence): the model input gets a
        synthetic result for each (see :mod:`~copaw_context.core.planning.pair_repair`). Folded
        incrementally: a step costs about its new parts."""
        last = len(self.messages) - 1
        while self._open.folded < last:
            self._open.fold(_ids(self.messages[self._open.folded]))
        return self._open.count(_ids(self.messages[last]) if last >= self._open.folded else [])

    def split_items(self) -> tuple[list[SplitItem], list[tuple[int, int]]]:
        """The context as split items and their (message, part) positions.

        A user message is one item (part -1); every part of other messages is an item, so a
        plan can cut through an assistant message and keep tool calls with their results
        wherever they sit (AgentScope 1.x keeps results in separate system messages).
        """
        answered = _answered_calls(self.messages)
        last_request = max((i for i, m in enumerate(self.messages) if m.is_request), default=-1)
        items: list[SplitItem] = []
        refs: list[tuple[int, int]] = []
        for mi, message in enumerate(self.messages):
            if message.is_request:
                items.append(
                    SplitItem(mi, message.tokens, is_user_request=True, pinned=message.pinned)
                )
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

    # ------------------------------------------------------------------ build
    def _entry(
        self,
        fingerprint: tuple[str, int],
        view: MessageView,
        meter: TokenMeter,
        exempt: ExemptCheck,
    ) -> MessageEntry:
        entry = MessageEntry(fingerprint, view.role, view.pinned)
        entry.parts = self._part_entries(view.parts, meter, exempt)
        entry.recount()
        return entry

    def _part_entries(
        self, parts: Sequence[PartView], meter: TokenMeter, exempt: ExemptCheck
    ) -> list[PartEntry]:
        entries: list[PartEntry] = []
        for part in parts:
            tokens, size = meter.part(part)
            entry = PartEntry(part.kind, tokens, size, call_id=part.call_id, data=part.data_blocks)
            entry.offloads = _offloads(part)
            if part.kind == "tool_call" and part.call_id is not None:
                self._calls[part.call_id] = (part.tool_name, part.tool_input)
            elif part.kind == "tool_result":
                name, tool_input = self._calls.get(part.call_id or "", (part.tool_name, None))
                entry.exempt = exempt(part.tool_name or name, tool_input)
                entry.unfinished = part.unfinished
                entry.pruned_to = _pruned_to(part)
                entry.unseen = bool(part.meta.get("unseen"))
            entries.append(entry)
        return entries


def _same_message(old: tuple[str, int], new: tuple[str, int]) -> bool:
    """Whether ``new`` is ``old`` grown by more parts: same id, no fewer parts."""
    return old[0] == new[0] and new[1] >= old[1] > 0


def _offloads(part: PartView) -> frozenset[str]:
    text = part.text
    return frozenset(referenced_offload_names([text])) if ".txt" in text else frozenset()


def _pruned_to(part: PartView) -> int | None:
    value = part.meta.get("pruned_to")
    return value if isinstance(value, int) else None


def _ids(message: MessageEntry) -> list[tuple[str, str]]:
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
