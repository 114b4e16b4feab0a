"""What the engine needs from a host agent framework: the ``HostSession`` protocol.

An adapter (one per AgentScope major) wraps one agent in a :class:`HostSession`. The engine
sees the agent's context only as :class:`MessageView` s (neutral copies of one message each,
built on demand) and changes it only through the session's methods, so it never imports the
host. Everything here is host-neutral data.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "ArchiveRecord",
    "CompactorModel",
    "ContextSource",
    "FixedParts",
    "HostSession",
    "MessageView",
    "PartKind",
    "PartView",
    "Role",
    "Window",
    "archive_id",
]

PartKind = Literal["text", "thinking", "hint", "tool_call", "tool_result", "data", "other"]
Role = Literal["user", "assistant", "system"]


class CompactorModel(Protocol):
    """The model that writes summaries and long-term memory: one request in, one reply out,
    no tools (a host wraps its chat model in this; ``copaw_context.testing`` has a scripted
    one)."""

    @property
    def context_size(self) -> int:
        """Tokens the model accepts."""
        ...

    async def complete(self, system_prompt: str, request: str) -> str:
        """The model's reply text to ``request`` under ``system_prompt``."""
        ...


@dataclass(slots=True)
class PartView:
    """One content block of a host message, as the engine sees it.

    ``text`` is what the model receives for the block (a tool call: its name and raw JSON
    input; a tool result: its name and its text parts joined by newlines). ``sent`` is False
    for a thinking block the model's formatter does not send back (it costs no tokens, but the
    compactor may still read it). ``meta`` is this package's own entry in the block's metadata
    (tool results only), which the host stores with the block.
    """

    kind: PartKind
    text: str = ""
    sent: bool = True
    data_blocks: int = 0
    call_id: str | None = None
    tool_name: str | None = None
    tool_input: str | None = None
    unfinished: bool = False
    is_error: bool = False
    output: tuple[Any, ...] = ()
    """A tool result's output parts in order: ``str`` for text, the host's own objects for
    data parts (passed back untouched by :meth:`HostSession.set_tool_result`)."""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class MessageView:
    """One host message: who sent it, when, and its parts in order."""

    msg_id: str
    role: Role
    name: str
    timestamp: str
    parts: list[PartView]
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class FixedParts:
    """What the model receives besides the context messages, as plain text."""

    system_prompt: str
    summary_message: str
    tool_schemas: str
    """The tool schemas as the JSON text a request carries (``""`` when there are none)."""


@dataclass(frozen=True, slots=True)
class Window:
    """The model's window in tokens and where that figure comes from."""

    tokens: int
    source: str


def archive_id(message_id: object, block_keys: Sequence[str]) -> str:
    """A stable identity of a message as archived: its id and the blocks it holds.

    A message cut in two by a compaction keeps its id in both halves; the block keys (in the
    host's own spelling, which must not change between versions) tell the halves apart, so
    each is archived exactly once.
    """
    digest = hashlib.sha1(",".join(block_keys).encode("utf-8", "surrogatepass")).hexdigest()
    safe_id = re.sub(r"[^A-Za-z0-9._:-]", "_", str(message_id))[:150]
    return f"{safe_id}#{digest[:16]}"


@dataclass(frozen=True, slots=True)
class ArchiveRecord:
    """One message (or the compacted half of one) as the archive stores it."""

    message: dict[str, Any]
    timestamp: str | None
    archive_id: str
    form: str
    """Which serialised form ``message`` has, e.g. ``"agentscope2.Msg"``."""
    part_keys: tuple[str, ...] = ()
    """Stable keys of the message's parts, in the order of ``message["content"]``."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (kept in the session state while the archive is unwritable)."""
        return {
            "message": self.message,
            "timestamp": self.timestamp,
            "archive_id": self.archive_id,
            "form": self.form,
            "part_keys": list(self.part_keys),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArchiveRecord:
        return cls(
            message=dict(data["message"]),
            timestamp=data.get("timestamp"),
            archive_id=str(data["archive_id"]),
            form=str(data.get("form", "")),
            part_keys=tuple(str(k) for k in data.get("part_keys", ())),
        )


class ContextSource(Protocol):
    """A sequence of messages the engine can fingerprint and view (see :class:`HostSession`)."""

    def fingerprint(self, start: int = 0) -> Sequence[tuple[str, int]]:
        """Per context message from ``start`` on: its id and its number of parts."""
        ...

    def part_objects(self, start: int = 0) -> Sequence[Sequence[object]] | None:
        """Per context message from ``start`` on: its parts as the host's own objects, in
        order (the list the message holds, not copied, not converted: the engine copies
        what it keeps and compares the objects), or None when the host cannot tell."""
        ...

    def view(self, index: int, first_part: int = 0) -> MessageView:
        """Message ``index`` with its parts from ``first_part`` on."""
        ...

    def context_key(self) -> tuple[int, int] | None:
        """``(container identity, length)``, or None: while the container stays the same and
        only grows, a step fingerprints just its tail."""
        ...


@runtime_checkable
class HostSession(ContextSource, Protocol):
    """One agent of a host framework, as the engine drives it.

    ``fingerprint()`` and ``part_objects()`` must be cheap (they run before every step): per
    context message its id and number of parts, and its parts as the host's objects. A
    message whose fingerprint and part objects did not change is not viewed again; of one
    that kept its id only the parts that are other objects now (replaced by the host or by
    another middleware, compared by identity, then by equality) are viewed and counted again,
    and of one that grew its new parts and its last known one. Every message's part objects
    are compared when ``others_may_edit()`` says so, else those of the newest message (and
    of every message now and then). A part edited in place (the same object) is seen when it
    is the last part of a message that grows, or through the session's own methods; from a
    host without ``part_objects`` (None) only messages that grew or shrank are viewed again.
    """

    @property
    def session_id(self) -> str: ...

    @property
    def agent_name(self) -> str: ...

    @property
    def model_name(self) -> str:
        """Name of the agent's model (chooses the tokenizer)."""
        ...

    @property
    def model_key(self) -> str | None:
        """The model this session's calls go to, for what its overflow errors teach (None:
        one set of figures for every model the agent calls)."""
        ...

    @property
    def primary_model_key(self) -> str | None:
        """The agent's own model (``model_key`` of a call that is not a fallback's)."""
        ...

    @property
    def message_form(self) -> str:
        """How :meth:`archive_record` serialises a message, e.g. ``"agentscope2.Msg"``."""
        ...

    @property
    def state(self) -> MutableMapping[str, Any]:
        """JSON-able state saved with the agent's session (survives a restart)."""
        ...

    @property
    def scratch(self) -> dict[str, Any]:
        """The engine's cache for this agent; not saved."""
        ...

    async def fixed_parts(self) -> FixedParts: ...

    def others_may_edit(self) -> bool:
        """Asked before each step: whether code other than the engine may have replaced
        parts of the context since the last step (another middleware; the caller between
        two replies). True: the step compares every message's part objects (in C, about a
        pointer per part); False: only the newest message's."""
        ...

    def use_model_input(self, model_input: object) -> None:
        """While the engine measures a model call: the input about to be sent, which
        :meth:`fixed_parts` may count instead of building one (``None`` afterwards)."""
        ...

    def window(self) -> Window: ...

    def compactor_model(self) -> CompactorModel | None:
        """The model that writes summaries (a separate one, or the agent's own)."""
        ...

    def has_separate_summary_model(self) -> bool:
        """Whether summaries come from a model of their own (not the agent's)."""
        ...

    def set_tool_result(
        self, index: int, part: int, output: Sequence[Any], meta: dict[str, Any]
    ) -> None:
        """Replace a tool result's output parts (as in :attr:`PartView.output`) and entry."""
        ...

    def set_text(self, index: int, part: int, text: str) -> None:
        """Replace the text of a text part (used to cut an oversized user request)."""
        ...

    def data_url(self, index: int, part: int) -> str:
        """Where a data part (an image ...) is: its URL, or ``data:<type>;base64,<data>``."""
        ...

    def set_data_text(self, index: int, part: int, text: str) -> None:
        """Replace a data part by a text block (a notice naming where its data went)."""
        ...

    def archive_record(self, index: int, parts: Sequence[int] | None) -> ArchiveRecord:
        """The message (or only ``parts`` of it) in the archive's form."""
        ...

    async def commit(self, keep: Sequence[tuple[int, Sequence[int] | None]]) -> None:
        """Make the context the kept messages in order (``None``: the whole message; else only
        those parts of it, as a message that keeps the original's id)."""
        ...

    def summary_text(self) -> str:
        """The summary message the model receives now (``""``: none)."""
        ...

    async def set_summary(self, text: str) -> None:
        """Set the summary message the model receives before the context (``""``: none)."""
        ...

    def views_of(self, messages: Sequence[Mapping[str, Any]]) -> list[MessageView]:
        """Serialised messages (in :attr:`message_form`) as views, without touching the
        context; raise ``ValueError`` naming the first message that is not valid."""
        ...

    async def load_context(self, messages: Sequence[Mapping[str, Any]], summary: str) -> None:
        """Make the context these messages (checked with :meth:`views_of`) and the summary
        message ``summary`` (``/load_history``)."""
        ...

    async def clear(self, *, new_session: bool) -> None:
        """Empty the context and the summary; with ``new_session`` start a new session id."""
        ...

    def awaiting_confirmation(self) -> bool:
        """Whether a tool call waits for the user's confirmation (then nothing is cleared)."""
        ...

    async def show_status(self, line: str) -> None:
        """Show a one-line status in the chat (``show_status``: before and after an automatic
        compaction), however the host shows a message that is not part of the context."""
        ...
