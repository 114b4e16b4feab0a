"""``AgentScope1Session``: one AgentScope 1.x ``ReActAgent`` as the engine's ``HostSession``.

The context is the agent's ``InMemoryMemory`` (``memory.content``: ``(Msg, marks)`` pairs),
edited in place: 1.x hooks receive deep copies of their arguments, so the memory is the only
way in. Messages marked as hints (``_MemoryMark.HINT``, deleted by the agent once formatted)
or as compressed by AgentScope's own compression are not part of the context we manage; they
keep their places. The summary goes through ``memory.update_compressed_summary`` (1.x
prepends it to the model input as a user message), at once on each ``set_summary``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any

from agentscope.message import Msg

from copaw_context.agentscope1.loaded import check_archivable, check_blocks
from copaw_context.agentscope1.messages import (
    ARCHIVE_FORM,
    ThinkingPolicy,
    archive_id,
    blocks_of,
    data_url,
    message_view,
    part_keys,
    set_data_text,
    set_result,
    set_text,
    with_blocks,
)
from copaw_context.core.host.protocol import (
    ArchiveRecord,
    CompactorModel,
    FixedParts,
    MessageView,
    Window,
)
from copaw_context.core.host.session_base import SessionBase

__all__ = ["HIDDEN_MARKS", "AgentScope1Session", "message_from_dict"]

HIDDEN_MARKS = frozenset({"hint", "compressed"})
"""Memory marks of messages the engine leaves alone (``_MemoryMark`` values of 1.x)."""

StatusPrinter = Callable[[str], Awaitable[None]]


def message_from_dict(data: Mapping[str, Any], number: int = 1) -> Msg:
    """``Msg.from_dict`` with a clear ``ValueError`` for what 1.x would assert on, for blocks
    its formatters cannot take, and for a message the archive could not write (``number``
    counts from 1)."""
    problem = None
    if not isinstance(data.get("name"), str):
        problem = '"name" must be text'
    elif data.get("role") not in ("user", "assistant", "system"):
        problem = '"role" must be "user", "assistant" or "system"'
    elif not isinstance(data.get("content"), str | list):
        problem = '"content" must be text or a list of blocks'
    elif isinstance(data["content"], list) and not all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in data["content"]
    ):
        problem = 'every block of "content" must be an object with a "type"'
    elif not isinstance(data.get("metadata") or {}, dict):
        problem = '"metadata" must be an object'
    if problem is not None:
        raise ValueError(f"message {number} is not an AgentScope 1.x message: {problem}")
    check_blocks(data, number)
    msg = Msg.from_dict(dict(data))
    check_archivable(msg, number)
    return msg


class AgentScope1Session(SessionBase):
    """Translates between one 1.x agent's memory and the engine."""

    def __init__(
        self,
        agent: Any,
        *,
        data: dict[str, Any],
        scratch: dict[str, Any],
        thinking: ThinkingPolicy,
        window: Window,
        compactor: CompactorModel | None,
        separate_compactor: bool,
        system_prompt: Callable[[], Awaitable[str]],
        summary: str,
        status: StatusPrinter,
    ) -> None:
        super().__init__(
            agent,
            scratch=scratch,
            thinking=thinking,
            window=window,
            compactor=compactor,
            separate_compactor=separate_compactor,
        )
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

    @property
    def message_form(self) -> str:
        return ARCHIVE_FORM

    @property
    def state(self) -> MutableMapping[str, Any]:
        engine_state: dict[str, Any] = self._data["engine"]
        return engine_state

    # ------------------------------------------------------------ reading
    def _content(self) -> list[tuple[Msg, list[str]]]:
        content: list[tuple[Msg, list[str]]] = self.agent.memory.content
        return content

    def fingerprint(self, start: int = 0) -> list[tuple[str, int]]:
        content = self._content()
        self._visible = [
            i for i, (_, marks) in enumerate(content) if not HIDDEN_MARKS.intersection(marks)
        ]
        return [
            (str(content[i][0].id), len(blocks_of(content[i][0]))) for i in self._visible[start:]
        ]

    def _msg(self, index: int) -> Msg:
        if index >= len(self._visible):
            self.fingerprint()
        return self._content()[self._visible[index]][0]

    def view(self, index: int, first_part: int = 0) -> MessageView:
        return message_view(self._msg(index), self._thinking, first_part)

    async def fixed_parts(self) -> FixedParts:
        schemas = self.agent.toolkit.get_json_schemas()
        tools = json.dumps(list(schemas), ensure_ascii=False, sort_keys=True) if schemas else ""
        if self._system is None:  # MEMORY.md is read only when the prompt is counted
            self._system = await self._system_prompt()
        return FixedParts(self._system, self._summary, tools)

    def summary_text(self) -> str:
        return self._summary

    def awaiting_confirmation(self) -> bool:
        return False  # 1.x runs every tool call at once; nothing waits for the user

    def views_of(self, messages: Sequence[Mapping[str, Any]]) -> list[MessageView]:
        return [
            message_view(message_from_dict(m, n), self._thinking) for n, m in enumerate(messages, 1)
        ]

    # ------------------------------------------------------------ writing
    def set_tool_result(
        self, index: int, part: int, output: Sequence[Any], meta: dict[str, Any]
    ) -> None:
        set_result(self._msg(index), part, output, meta)

    def set_text(self, index: int, part: int, text: str) -> None:
        set_text(self._msg(index), part, text)

    def data_url(self, index: int, part: int) -> str:
        return data_url(self._msg(index), part)

    def set_data_text(self, index: int, part: int, text: str) -> None:
        set_data_text(self._msg(index), part, text)

    async def set_summary(self, text: str) -> None:
        """The summary, handed to the memory at once (``update_compressed_summary``)."""
        await self.agent.memory.update_compressed_summary(text)
        self._summary = text

    def archive_record(self, index: int, parts: Sequence[int] | None) -> ArchiveRecord:
        msg = self._msg(index)
        if parts is not None:
            msg = with_blocks(msg, parts)
        return ArchiveRecord(
            message=msg.to_dict(),
            timestamp=msg.timestamp,
            archive_id=archive_id(msg),
            form=ARCHIVE_FORM,
            part_keys=tuple(part_keys(msg)),
        )

    async def commit(self, keep: Sequence[tuple[int, Sequence[int] | None]]) -> None:
        self.fingerprint()
        content = self._content()
        kept: dict[int, tuple[Msg, list[str]]] = {}
        for index, parts in keep:
            msg, marks = content[self._visible[index]]
            kept[self._visible[index]] = (msg if parts is None else with_blocks(msg, parts), marks)
        visible = set(self._visible)
        content[:] = [
            kept.get(i, entry) for i, entry in enumerate(content) if i in kept or i not in visible
        ]
        self.fingerprint()

    async def load_context(self, messages: Sequence[Mapping[str, Any]], summary: str) -> None:
        loaded: list[tuple[Msg, list[str]]] = [
            (message_from_dict(m, n), []) for n, m in enumerate(messages, 1)
        ]
        content = self._content()
        content[:] = [e for e in content if HIDDEN_MARKS.intersection(e[1])]
        content.extend(loaded)  # ids are unique (checked): 1.x's add would drop duplicates
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
