"""What every adapter does the same way when it views a host block: the neutral
:class:`~copaw_context.core.host.protocol.PartView` of a tool call, a tool result, a data
block and a thinking block, the role, and this package's entry in a host's metadata
(``metadata["copaw_context"]``: ``pinned`` on a message, the stage-1 entry of a result).

An adapter reads its host's block (its own types) and calls these; what the engine sees of
a block is decided here once for every host.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from copaw_context.core.host.protocol import PartView, Role

__all__ = [
    "METADATA_KEY",
    "ThinkingSent",
    "data_view",
    "entry_in",
    "pin_in",
    "pins_made",
    "pinned_in",
    "role_of",
    "thinking_sent",
    "tool_call_view",
    "tool_result_view",
]

METADATA_KEY = "copaw_context"
"""Key of this package's entry in a host's message (and block) metadata."""

ThinkingSent = bool | Callable[[Any], bool]
"""Whether the model's formatter sends a thinking block back: for all, or decided per block."""


def entry_in(metadata: object) -> dict[str, Any]:
    """This package's entry in ``metadata`` (the stored dict itself; ``{}`` when none)."""
    entry = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    return entry if isinstance(entry, dict) else {}


def pinned_in(metadata: object) -> bool:
    """Whether ``metadata`` marks its message as pinned (never compacted)."""
    return entry_in(metadata).get("pinned") is True


_pins = [0]


def pins_made() -> int:
    """How many times :func:`pin_in` ran in this process: a ledger that saw another count
    reads its messages' pins again (a pin set on a message it already counted)."""
    return _pins[0]


def pin_in(metadata: MutableMapping[str, Any]) -> None:
    """Mark the message of ``metadata`` as pinned (a new entry, the old one's keys kept)."""
    metadata[METADATA_KEY] = {**entry_in(metadata), "pinned": True}
    _pins[0] += 1


def role_of(role: object) -> Role:
    """A host role as the engine's (``user``, ``assistant``, ``system``; else assistant)."""
    return role if role in ("user", "assistant", "system") else "assistant"


def thinking_sent(policy: ThinkingSent, block: Any) -> bool:
    """Whether ``block`` (a thinking block) reaches the model under ``policy``."""
    return policy if isinstance(policy, bool) else bool(policy(block))


def tool_call_view(name: str, tool_input: str, call_id: str) -> PartView:
    """A tool call: its text is its name and its raw JSON input."""
    return PartView(
        "tool_call",
        f"{name} {tool_input}",
        call_id=call_id,
        tool_name=name,
        tool_input=tool_input,
    )


def tool_result_view(
    name: str,
    output: tuple[Any, ...],
    call_id: str,
    entry: object,
    *,
    unfinished: bool = False,
    is_error: bool = False,
) -> PartView:
    """A tool result of ``output`` parts (``str`` for text, the host's data blocks as they
    are) and this package's ``entry`` stored with it (copied; ``{}`` when not a dict)."""
    texts = [p for p in output if isinstance(p, str)]
    return PartView(
        "tool_result",
        name + " " + "\n".join(texts),
        data_blocks=len(output) - len(texts),
        call_id=call_id,
        tool_name=name,
        unfinished=unfinished,
        is_error=is_error,
        output=output,
        meta=dict(entry) if isinstance(entry, dict) else {},
    )


def data_view(label: str) -> PartView:
    """A data block (an image ...): its label, not sent as text (``data_label``)."""
    return PartView("data", label, sent=False, data_blocks=1)
