"""``MemoryCompactionHook``: the AgentScope 2.x middleware in front of the ``ContextEngine``.

``on_acting``           stage-1 truncation of a fresh tool result, before the agent stores it
``on_compress_context`` (AgentScope's pre-reasoning point) the engine's pipeline: stage-2
                        pruning, count, compaction and archive; AgentScope's image limit
``on_reply``            chat commands: ``/compact [note]``, ``/context``, ``/clear``, ``/new``
``on_model_call``       marks results seen, repairs the input's tool pairing (see
                        ``repair.py``), calibrates the count with the reported usage, and
                        recovers once from a provider's "input too long" error
Every method only translates between AgentScope and the engine.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from agentscope.message import Msg, TextBlock
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase, ChatResponse
from agentscope.tool import ToolBase, ToolResponse

from copaw_context.agentscope2.hook_lists import join_hook_lists, refuse_another_hook
from copaw_context.agentscope2.messages import METADATA_KEY, hint_text
from copaw_context.agentscope2.repair import repaired_messages
from copaw_context.agentscope2.session import AgentScope2Session
from copaw_context.agentscope2.stream import reply_events, status_events
from copaw_context.agentscope2.summariser import AgentScopeSummariser
from copaw_context.agentscope2.thinking import thinking_policy
from copaw_context.agentscope2.tools import allowed_tool, make_read_file_tool
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.report import Limits
from copaw_context.core.events import EventCallback
from copaw_context.core.host.hook_base import Attached, EngineHook
from copaw_context.core.host.hook_events import (
    FreshResult,
    fail_open,
    user_command,
    warn_replacing_tool,
)
from copaw_context.core.host.models import reported_usage
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.host.ratios import HostLimits
from copaw_context.core.host.session_base import state_under
from copaw_context.core.tokens.usage import ReportedUsage

__all__ = ["CACHE_FIELDS", "LEGACY_STATE_KEY", "MemoryCompactionHook"]

CACHE_FIELDS = ("cache_input_tokens", "cache_creation_input_tokens")
"""The cache reads and writes of a 2.x ``ChatUsage`` (``core.host.models.reported_usage``)."""

LEGACY_STATE_KEY = "copaw_context"
"""Where versions up to 0.1.0 kept per-agent state; moved to the middleware key on first use."""

logger = logging.getLogger("copaw_context")


class MemoryCompactionHook(EngineHook, MiddlewareBase):
    """Light context management for an AgentScope 2.x ``Agent``.

    Example::

        hook = MemoryCompactionHook.from_agent_json("agent.json", workspace_dir="ws")
        agent = Agent(name="a", system_prompt="...", model=model,
                      toolkit=Toolkit(tools=[*await hook.list_tools(), *my_tools]),
                      middlewares=[hook])
    """

    def __init__(
        self,
        config: RunningConfig | None = None,
        workspace_dir: str | os.PathLike[str] = ".",
        compactor_model: ChatModelBase | None = None,
        *,
        on_event: EventCallback | None = None,
    ) -> None:
        self.start_engine(config, workspace_dir, on_event, compactor_model)
        self.limits = HostLimits(self.config)
        self._tools: list[ToolBase] | None = None

    def attach(self, agent: Any) -> Attached[MemoryCompactionHook]:
        """Attach to an ``Agent`` that is already built, called plainly or awaited (see
        :func:`copaw_context.agentscope2.attach`)."""
        join_hook_lists(agent, self)
        self.tools_pending(agent)

        async def finish() -> None:
            await self.add_tools(agent)

        return Attached(self, finish)

    async def add_tools(self, agent: Any) -> None:
        """Add :meth:`list_tools` to ``agent``'s toolkit if they are pending (idempotent); a
        tool of the same name is replaced, with a warning (as on 1.x: another ``read_file``
        cannot follow our notices' ``line_offset``)."""
        if not self.take_pending_tools(agent):
            return
        for tool in await self.list_tools():
            present = await agent.toolkit.get_tool(tool.name)
            if present is tool:
                continue
            if present is not None:
                warn_replacing_tool(tool.name)
                await agent.toolkit.remove_tool(tool.name)
            await agent.toolkit.add_tool(tool)

    async def list_tools(self) -> list[ToolBase]:
        """``read_file`` bound to the workspace, and the long-term memory tools
        (``memory_append_log``, ``memory_edit``, ``memory_search``) unless memory is off;
        add them to the agent's ``Toolkit``."""
        if self._tools is None:
            self._tools = self.engine_tools(make_read_file_tool, allowed_tool)
        return list(self._tools)

    async def session(self, agent: Any, model: Any = None) -> AgentScope2Session:
        """The engine's view of ``agent`` (its state lives under this middleware's key) for
        calls to ``model`` (default the agent's own; its fallback model has its own window,
        tokenizer and overflow figures)."""
        model = agent.model if model is None else model
        key = await self.get_middleware_key()
        data = state_under(agent.state.middle_context, key, LEGACY_STATE_KEY)
        setup = await self.setup(
            agent,
            formatter=getattr(model, "formatter", None),
            probe=lambda: thinking_policy(model),
            context_size=model.context_size,
            own_model=model,
            summariser=lambda compactor, window: AgentScopeSummariser(compactor, window=window),
        )
        return AgentScope2Session(agent, setup, state=data, model=model)

    # ------------------------------------------------------------------- hooks
    async def on_acting(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., AsyncGenerator[Any, None]],
    ) -> AsyncGenerator[Any, None]:
        """Stage 1: bound a fresh tool result before the agent stores it."""
        tool_call = input_kwargs["tool_call"]
        async for item in next_handler(**input_kwargs):
            if isinstance(item, ToolResponse):
                await self.bound_result(
                    agent, functools.partial(self._fresh, agent, tool_call, item)
                )
            yield item

    def _fresh(self, agent: Any, tool_call: Any, item: ToolResponse) -> FreshResult:
        """The tool response ``item`` as a fresh result (AgentScope's own cut kept off it)."""
        self.limits.relax_builtin_truncation(agent)
        parts = [b.text if isinstance(b, TextBlock) else b for b in item.content]
        entry = item.metadata.get(METADATA_KEY)

        def write(parts: list[Any], meta: dict[str, Any]) -> None:
            item.content = [TextBlock(text=p) if isinstance(p, str) else p for p in parts]
            item.metadata[METADATA_KEY] = meta

        meta = dict(entry) if isinstance(entry, dict) else {}
        return FreshResult(tool_call.name, tool_call.input, parts, meta, write)

    async def on_compress_context(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., Awaitable[None]],
    ) -> None:
        """The engine's pre-reasoning pipeline (replaces the built-in compression).

        AgentScope's own inputs still apply: the image limit of the ``context_config`` in
        use, an explicit ``context_config`` (e.g. from its compression tool) for the
        threshold and reserve, and ``instructions`` as a note to the compactor.
        """
        explicit = input_kwargs.get("context_config")

        async def prepare(session: HostSession) -> tuple[str, Limits | None]:
            self.limits.align_builtin_hint(agent)
            cfg = explicit or agent.context_config
            # Private, but it is AgentScope's own image rule (oldest out first), applied as
            # the built-in does. Pinned by tests/agentscope2/test_agentscope_pins.py.
            most = getattr(cfg, "max_image_num", 0)
            await self.limit_data(session, most, lambda: agent._limit_context_images(cfg))
            note = hint_text(input_kwargs.get("instructions"))
            return note, self.limits.from_context_config(explicit, agent)

        if await self.before_step(agent, prepare) is None:  # not managed: AgentScope's own
            await next_handler(**input_kwargs)

    async def on_reasoning(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., AsyncGenerator[Any, None]],
    ) -> AsyncGenerator[Any, None]:
        """Status lines of the compaction that just ran (``show_status``) as ``CustomEvent``
        s named ``copaw_context_status``, before the model's own events."""
        for event in status_events(self.scratch(agent)):
            yield event
        async for item in next_handler(**input_kwargs):
            yield item

    async def on_system_prompt(self, agent: Any, current_prompt: str) -> str:
        """MEMORY.md (bounded) after the agent's own system prompt."""
        model = self.called_model(agent, agent.model)
        window = self.config.window_for(model.context_size)[0]
        return await self.memory_prompt(current_prompt, window)

    async def on_reply(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., AsyncGenerator[Any, None]],
    ) -> AsyncGenerator[Any, None]:
        """Answer ``/compact``, ``/context``, ``/clear`` and ``/new`` without the model (and
        add the tools of a plain :meth:`attach` first). An agent built with two different
        hooks is refused here (ValueError), as :meth:`attach` refuses a second one."""
        refuse_another_hook(agent, self)
        with fail_open("could not add read_file and the memory tools"):
            await self.add_tools(agent)
        command = user_command(input_kwargs.get("inputs"), Msg)
        if command is None:
            async for item in next_handler(**input_kwargs):
                yield item
            return
        for item in reply_events(agent, await self.command_reply(agent, command)):
            yield item

    async def on_model_call(
        self,
        agent: Any,
        input_kwargs: dict[str, Any],
        next_handler: Callable[..., Awaitable[Any]],
    ) -> Any:
        """Measure the input, calibrate with the reported usage, and recover once from a
        provider's "input too long" error by compacting harder.

        The call may go to the agent's fallback model (AgentScope's ``ModelConfig.
        fallback_model``, named by ``current_model``): the input is then fitted to that
        model's window first, and what its errors teach stays with it."""
        model = input_kwargs.get("current_model")
        session = await self.session(agent, model)

        async def send(kwargs: dict[str, Any]) -> Any:
            return await next_handler(**self._repaired(agent, kwargs))

        async def rebuild() -> dict[str, Any]:
            return {**input_kwargs, **await self._model_input(agent, session)}

        def usage(response: Any) -> ReportedUsage | None:
            if not isinstance(response, ChatResponse):
                return None
            return reported_usage(response.usage, session.model, CACHE_FIELDS)

        fallback = session.model if session.is_fallback else None
        return await self.model_call(
            agent, session, input_kwargs, send, rebuild, usage, fallback=fallback
        )

    async def _model_input(self, agent: Any, session: AgentScope2Session) -> dict[str, Any]:
        """The model input for the agent's context now (its system prompt sized for the
        window of the model called)."""
        with self.calling(agent, session.model):
            # Private but unavoidable: the model input for the new context. Pinned by
            # tests/agentscope2/test_agentscope_pins.py.
            return dict(await agent._prepare_model_input())

    def _repaired(self, agent: Any, model_input: dict[str, Any]) -> dict[str, Any]:
        """``model_input`` with its tool pairing repaired (the context is not changed)."""
        messages = model_input.get("messages") or []
        repaired = self.repaired(agent, messages, repaired_messages)
        return model_input if repaired is messages else {**model_input, "messages": repaired}
