"""``AgentScope1Session``: one AgentScope 1.x ``ReActAgent`` as the engine's ``HostSession``.

The context is the agent's ``InMemoryMemory`` (``memory.content``: ``(Msg, marks)`` pairs),
edited in place: 1.x hooks receive deep copies of their arguments, so the memory is the only
way in. Messages marked as hints (``_MemoryMark.HINT``, deleted by the agent once formatted)
or as compressed by AgentScope's own compression are not part of the context we manage; they
keep their places. The summary goes through ``memory.update_compressed_summary`` (1.x
prepends it to the model input as a user message), at once on each ``set_summary``.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agentscope.message import Msg

from copaw_context.agentscope1.messages import ARCHIVE_FORM, with_blocks
from copaw_context.core.host.dict_blocks import blocks_of
from copaw_context.core.host.dict_session import (
    DictBlockSession,
    committed_entries,
    loaded_entries,
    visible_entries,
)
from copaw_context.core.host.loaded import check_archivable, check_dict_message
from copaw_context.core.host.protocol import FixedParts
from copaw_context.core.host.session_base import SessionSetup

__all__ = ["HIDDEN_MARKS", "AgentScope1Session", "message_from_dict"]

HIDDEN_MARKS = frozenset({"hint", "compressed"})
"""Memory marks of messages the engine leaves alone (``_MemoryMark`` values of 1.x)."""

StatusPrinter = Callable[[str], Awaitable[None]]


def _blocks(msg: Msg) -> list[Any]:
    content = msg.content
    return content if isinstance(content, list) else [content]


def message_from_dict(data: Mapping[str, Any], number: int = 1) -> Msg:
    """``Msg.from_dict`` with a clear ``ValueError`` for what 1.x would assert on, for blocks
    its formatters cannot take, and for a message the archive could not write (``number``
    counts from 1; the rules are ``core.host.loaded``'s)."""
    check_dict_message(data, number)
    msg = Msg.from_dict(dict(data))
    # Written as the archive does, from a copy: 1.x hooks deep-copy their arguments, so a
    # message the agent could not copy is refused too.
    check_archivable(number, lambda: copy.deepcopy(msg).to_dict())
    return msg


class AgentScope1Session(DictBlockSession):
    """Translates between one 1.x agent's memory and the engine."""

    FORM = ARCHIVE_FORM

    def __init__(
        self,
        agent: Any,
        setup: SessionSetup,
        *,
        data: dict[str, Any],
        system_prompt: Callable[[], Awaitable[str]],
        summary: str,
        status: StatusPrinter,
    ) -> None:
        super().__init__(agent, setup, data["engine"])
        self._data = data
        self._system_prompt = system_prompt
        self._system: str | None = None
        self._summary = summary
        self._status = status
        self._visible: list[int] = []

    # ------------------------------------------------------------ identity
    @property
    def session_id(self) -> str:
        return str(self._data["session_id"])

    @property
    def model_name(self) -> str:
        return str(getattr(self.agent.model, "model_name", "") or "")

    # ------------------------------------------------------------ reading
    def _content(self) -> list[tuple[Msg, list[str]]]:
        content: list[tuple[Msg, list[str]]] = self.agent.memory.content
        return content

    def fingerprint(self, start: int = 0) -> list[tuple[str, int]]:
        content = self._content()
        self._visible = visible_entries(content, HIDDEN_MARKS)
        return [
            (str(content[i][0].id), len(blocks_of(content[i][0]))) for i in self._visible[start:]
        ]

    def part_objects(self, start: int = 0) -> list[list[Any]]:
        """The blocks each message holds (a string content is its one part); the messages
        are those of the latest :meth:`fingerprint`."""
        content = self._content()
        return [_blocks(content[i][0]) for i in self._visible[start:]]

    def message(self, index: int) -> Msg:
        if index >= len(self._visible):
            self.fingerprint()
        return self._content()[self._visible[index]][0]

    def with_blocks(self, msg: Msg, parts: Sequence[int]) -> Msg:
        return with_blocks(msg, parts)

    def to_dict(self, msg: Msg) -> dict[str, Any]:
        data: dict[str, Any] = msg.to_dict()
        return data

    def from_dict(self, data: Mapping[str, Any], number: int) -> Msg:
        return message_from_dict(data, number)

    async def fixed_parts(self) -> FixedParts:
        tools = self.schemas_json(self.agent.toolkit.get_json_schemas() or [])
        if self._system is None:  # MEMORY.md is read only when the prompt is counted
            self._system = await self._system_prompt()
        return FixedParts(self._system, self._summary, tools)

    def summary_text(self) -> str:
        return self._summary

    # 1.x runs every tool call at once; nothing waits for the user (awaiting_confirmation).

    # ------------------------------------------------------------ writing
    async def set_summary(self, text: str) -> None:
        """The summary, handed to the memory at once (``update_compressed_summary``)."""
        await self.agent.memory.update_compressed_summary(text)
        self._summary = text

    async def commit(self, keep: Sequence[tuple[int, Sequence[int] | None]]) -> None:
        self.fingerprint()
        content = self._content()
        content[:] = committed_entries(content, self._visible, keep, with_blocks)
        self.fingerprint()

    async def load_context(self, messages: Sequence[Mapping[str, Any]], summary: str) -> None:
        loaded = [message_from_dict(m, n) for n, m in enumerate(messages, 1)]
        content = self._content()
        # ids are unique (checked): 1.x's add would drop duplicates
        content[:] = loaded_entries(content, HIDDEN_MARKS, loaded)
        await self.set_summary(summary)
        self.fingerprint()

    async def clear(self, *, new_session: bool) -> None:
        await self.agent.memory.clear()
        await self.set_summary("")
        if new_session:
            self._data["session_id"] = uuid.uuid4().hex
        self._visible = []

    async def show_status(self, line: str) -> None:
        await self._status(line)
