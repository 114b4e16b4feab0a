"""``AgentScope2Session``: one AgentScope 2.x ``Agent`` as the engine's ``HostSession``."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from operator import attrgetter
from typing import Any, TypeVar
from uuid import uuid4

from agentscope.message import (
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

from copaw_context.agentscope2.hook_lists import has_other_middlewares
from copaw_context.agentscope2.loaded import validated_messages
from copaw_context.agentscope2.messages import (
    ARCHIVE_FORM,
    METADATA_KEY,
    archive_id,
    message_view,
    set_result_output,
    with_blocks,
)
from copaw_context.core.host.models import model_key
from copaw_context.core.host.protocol import ArchiveRecord, FixedParts, MessageView
from copaw_context.core.host.runtime_hint import runtime_hint_allowance
from copaw_context.core.host.session_base import SessionBase, SessionSetup

__all__ = ["AgentScope2Session"]

_CONTENT = attrgetter("content")
B = TypeVar("B")


class AgentScope2Session(SessionBase):
    """Translates between one agent's ``AgentState`` and the engine."""

    FORM = ARCHIVE_FORM

    def __init__(
        self,
        agent: Any,
        setup: SessionSetup,
        *,
        state: MutableMapping[str, Any],
        model: Any = None,
    ) -> None:
        super().__init__(agent, setup, state)
        self.model = agent.model if model is None else model
        """The model the calls of this session go to: the agent's, or its fallback model."""
        self.model_input: dict[str, Any] | None = None
        """The input of the model call being made, when there is one (its system prompt and
        tool schemas are what the model gets, so they need not be prepared again)."""

    # ------------------------------------------------------------ identity
    @property
    def session_id(self) -> str:
        return str(self.agent.state.session_id)

    @property
    def model_name(self) -> str:
        return str(self.model.model)

    @property
    def model_key(self) -> str | None:
        return model_key(self.model)

    @property
    def primary_model_key(self) -> str | None:
        return model_key(self.agent.model)

    @property
    def is_fallback(self) -> bool:
        """Whether the call goes to a model other than the agent's own (its fallback)."""
        return self.model is not self.agent.model

    # ------------------------------------------------------------ reading
    def fingerprint(self, start: int = 0) -> list[tuple[str, int]]:
        context = self.agent.state.context
        return [(m.id, len(m.content)) for m in context[start:]]

    def context_key(self) -> tuple[int, int]:
        context = self.agent.state.context
        return id(context), len(context)

    def part_objects(self, start: int = 0) -> list[list[Any]]:
        # The live content lists, gathered in C: no object per message (no collector work).
        context = self.agent.state.context
        return list(map(_CONTENT, context[start:] if start else context))

    def others_may_edit(self) -> bool:
        """At the first step of a reply (the caller may have edited the context since the
        last one), and at every step of an agent with other middlewares."""
        reply = getattr(self.agent.state, "reply_id", None)
        return self.first_step_of(reply) or has_other_middlewares(self.agent)

    def view(self, index: int, first_part: int = 0) -> MessageView:
        return message_view(self.agent.state.context[index], self._thinking, first_part)

    def use_model_input(self, model_input: object) -> None:
        self.model_input = model_input if isinstance(model_input, dict) else None

    async def fixed_parts(self) -> FixedParts:
        model_input = self.model_input
        hint = ""
        if model_input is None:
            # Private but unavoidable: the exact system prompt and tool schemas the model
            # gets. Pinned by tests/agentscope2/test_agentscope_pins.py.
            model_input = await self.agent._prepare_model_input()
            hint = runtime_hint_allowance(self.agent)  # appended after our step
        messages: Sequence[Msg] = model_input.get("messages") or []
        system = ((messages[0].get_text_content() or "") if messages else "") + hint
        return FixedParts(
            system_prompt=system,
            summary_message=self.summary_text(),
            tool_schemas=self.schemas_json(model_input.get("tools") or []),
        )

    def summary_text(self) -> str:
        summary = self.agent.state.summary
        if isinstance(summary, str):
            return summary
        return "\n".join(b.text for b in summary if isinstance(b, TextBlock))

    def awaiting_confirmation(self) -> bool:
        return bool(self.agent.state.has_awaiting_tool_calls(self.agent.name))

    # ------------------------------------------------------------ writing
    def _block(self, index: int, part: int, kind: type[B], what: str) -> B:
        block = self.agent.state.context[index].content[part]
        if not isinstance(block, kind):
            raise TypeError(f"part {part} of message {index} is a {block.type}, not {what}")
        return block

    def set_tool_result(
        self, index: int, part: int, output: Sequence[Any], meta: dict[str, Any]
    ) -> None:
        block = self._block(index, part, ToolResultBlock, "a tool result")
        set_result_output(block, output)
        block.metadata[METADATA_KEY] = meta

    def set_text(self, index: int, part: int, text: str) -> None:
        self._block(index, part, TextBlock, "a text").text = text

    def data_url(self, index: int, part: int) -> str:
        source = self._block(index, part, DataBlock, "data").source
        if isinstance(source, Base64Source):
            return f"data:{source.media_type};base64,{source.data}"
        return str(source.url)

    def set_data_text(self, index: int, part: int, text: str) -> None:
        self._block(index, part, DataBlock, "data")
        msg = self.agent.state.context[index]
        # User messages take text blocks only; others a hint, as AgentScope's image limit.
        block = TextBlock(text=text) if msg.role == "user" else HintBlock(hint=text)
        content = list(msg.content)
        content[part] = block
        msg.content = content

    async def set_summary(self, text: str) -> None:
        self.agent.state.summary = text

    def archive_record(self, index: int, parts: Sequence[int] | None) -> ArchiveRecord:
        msg = self.agent.state.context[index]
        if parts is not None:
            msg = with_blocks(msg, parts, usage=False)
        return self.record(
            msg.model_dump(mode="json"),
            msg.created_at,
            archive_id(msg),
            [f"{msg.id}/{b.type}:{b.id}" for b in msg.content],
        )

    async def commit(self, keep: Sequence[tuple[int, Sequence[int] | None]]) -> None:
        context = self.agent.state.context
        kept = [
            context[i] if parts is None else with_blocks(context[i], parts, usage=True)
            for i, parts in keep
        ]
        self.agent.state.context = kept
        await self._clean_read_cache(kept)

    def views_of(self, messages: Sequence[Mapping[str, Any]]) -> list[MessageView]:
        return [message_view(m, self._thinking) for m in validated_messages(messages)]

    async def load_context(self, messages: Sequence[Mapping[str, Any]], summary: str) -> None:
        self.agent.state.context = validated_messages(messages)
        self.agent.state.summary = summary
        await self._clean_read_cache(self.agent.state.context)

    async def clear(self, *, new_session: bool) -> None:
        self.agent.state.context = []
        self.agent.state.summary = ""
        if new_session:
            self.agent.state.session_id = uuid4().hex

    async def _clean_read_cache(self, kept: Sequence[Msg]) -> None:
        """Forget AgentScope ``Read`` caches whose Read result left the context (as the
        built-in compression does)."""
        calls = [(b.name, b.input) for m in kept for b in m.content if isinstance(b, ToolCallBlock)]
        state = self.agent.state
        await self.forget_reads(calls, lambda paths: state.tool_context.clean_file_cache(paths))
