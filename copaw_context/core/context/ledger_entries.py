"""What the ledger remembers of each message and part, and how an entry is made from the
host's view of a block (its counts, pairing id, exempt flag, cut limit, "unseen" flag and the
offload names its text references)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from copaw_context.core.host.protocol import MessageView, PartKind, PartView, Role
from copaw_context.core.tokens.meter import MESSAGE_OVERHEAD_TOKENS, TokenMeter
from copaw_context.core.toolresults.offload_names import referenced_offload_names

__all__ = [
    "Calls",
    "ExemptCheck",
    "MessageEntry",
    "PartEntry",
    "call_ids",
    "message_entry",
    "offloads_of",
    "part_entries",
    "pruned_to",
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

Calls = dict[str, tuple[str | None, str | None]]
"""Tool call id -> (tool name, raw input) of the calls seen, for their results' exempt check."""


def message_entry(
    fingerprint: tuple[str, int],
    view: MessageView,
    meter: TokenMeter,
    exempt: ExemptCheck,
    calls: Calls,
) -> MessageEntry:
    """The entry of a message first seen (every part counted)."""
    entry = MessageEntry(fingerprint, view.role, view.pinned)
    entry.parts = part_entries(view.parts, meter, exempt, calls)
    entry.recount()
    return entry


def part_entries(
    parts: Sequence[PartView],
    meter: TokenMeter,
    exempt: ExemptCheck,
    calls: Calls,
    reused: Sequence[bool] = (),
) -> list[PartEntry]:
    """Entries of ``parts``, but for those ``reused`` marks (an entry kept elsewhere); the
    tool calls among them go into ``calls``."""
    entries: list[PartEntry] = []
    for offset, part in enumerate(parts):
        if offset < len(reused) and reused[offset]:
            continue
        tokens, size = meter.part(part)
        entry = PartEntry(part.kind, tokens, size, call_id=part.call_id, data=part.data_blocks)
        entry.offloads = offloads_of(part)
        if part.kind == "tool_call" and part.call_id is not None:
            calls[part.call_id] = (part.tool_name, part.tool_input)
        elif part.kind == "tool_result":
            name, tool_input = calls.get(part.call_id or "", (part.tool_name, None))
            entry.exempt = exempt(part.tool_name or name, tool_input)
            entry.unfinished = part.unfinished
            entry.pruned_to = pruned_to(part)
            entry.unseen = bool(part.meta.get("unseen"))
        entries.append(entry)
    return entries


def offloads_of(part: PartView) -> frozenset[str]:
    """The offload file names the part's text references."""
    text = part.text
    return frozenset(referenced_offload_names([text])) if ".txt" in text else frozenset()


def pruned_to(part: PartView) -> int | None:
    """The limit a result was cut to (our metadata entry), if any."""
    value = part.meta.get("pruned_to")
    return value if isinstance(value, int) else None


def call_ids(message: MessageEntry) -> list[tuple[str, str]]:
    """(kind, call id) of the message's tool calls and results, in order."""
    return [(p.kind, p.call_id) for p in message.parts if p.call_id is not None]
