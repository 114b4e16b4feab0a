"""``MemoryCompactionHook`` for AgentScope 1.x: the agent's hooks in front of the engine.

``pre_reasoning``  the engine's pipeline (stage-2 pruning, count, compaction, archive) on
                   ``agent.memory``, then the model-call measure (results become seen)
``post_acting``    stage-1 truncation of the tool result ``_acting`` just stored
``reply``          (wrapped on the instance) ``/compact``, ``/context``, ``/clear``, ``/new``,
                   ``/history``, ``/dump_history``, ``/load_history`` answered without the model
model proxy        usage calibration and one recovery from "input too long" (see model.py)
Registration is in :mod:`copaw_context.agentscope1.attach`; every method only translates.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from agentscope.message import Msg

from copaw_context.agentscope1.attach import attach, attached_to
from copaw_context.agentscope1.session import AgentScope1Session
from copaw_context.agentscope1.state import agent_state
from copaw_context.agentscope1.summariser import AgentScope1Summariser
from copaw_context.agentscope1.thinking import thinking_policy
from copaw_context.agentscope1.tools import as_tool_function, make_read_file
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.events import EventCallback
from copaw_context.core.host.dict_session import fresh_dict_result
from copaw_context.core.host.hook_base import Attached, EngineHook
from copaw_context.core.host.hook_events import FreshResult
from copaw_context.core.host.models import check_formatted_compactor
from copaw_context.core.host.protocol import Window
from copaw_context.core.host.views import METADATA_KEY
from copaw_context.core.tools.read_entries import ReadEntries

__all__ = ["MemoryCompactionHook", "attached_hook", "inner_model"]

logger = logging.getLogger("copaw_context")


def inner_model(agent: Any) -> Any:
    """The agent's own model (under our proxy, if any)."""
    return getattr(agent.model, "inner", agent.model)


def _inner_formatter(agent: Any) -> Any:
    return getattr(agent.formatter, "inner", agent.formatter)


class MemoryCompactionHook(EngineHook):
    """Light context management for an AgentScope 1.x ``ReActAgent``.

    Example::

        hook = MemoryCompactionHook.from_agent_json("~/.qwenpaw/workspaces/a1/agent.json")
        agent = ReActAgent(name="a", sys_prompt="...", model=model, formatter=formatter)
        hook.attach(agent)  # attached at once; awaiting it works too
    """

    def __init__(
        self,
        config: RunningConfig | None = None,
        workspace_dir: str | os.PathLike[str] = ".",
        compactor_model: Any | None = None,
        *,
        compactor_formatter: Any | None = None,
        on_event: EventCallback | None = None,
    ) -> None:
        check_formatted_compactor(compactor_model, compactor_formatter)
        self.start_engine(config, workspace_dir, on_event, compactor_model)
        self.compactor_formatter = compactor_formatter
        self.read_entries = ReadEntries()

    def attach(self, agent: Any) -> Attached[MemoryCompactionHook]:
        """Attach to a 1.x ``ReActAgent``, called plainly or awaited (see
        :func:`copaw_context.agentscope1.attach`)."""
        return attach(agent, self)

    def tool_functions(self) -> list[Any]:
        """``read_file`` bound to the workspace and the memory tools (unless memory is off),
        as 1.x tool functions returning ``ToolResponse``."""
        return self.engine_tools(make_read_file, as_tool_function)

    # ------------------------------------------------------------------- session
    def window(self, agent: Any) -> Window:
        return self.model_window(agent, getattr(inner_model(agent), "context_size", None))

    async def session(self, agent: Any) -> AgentScope1Session:
        """The engine's view of ``agent`` (its state is the agent's ``copaw_context``)."""
        formatter = _inner_formatter(agent)
        setup = await self.setup(
            agent,
            formatter=formatter,
            probe=lambda: thinking_policy(formatter),
            context_size=getattr(inner_model(agent), "context_size", None),
            own_model=inner_model(agent),
            # Without its own formatter the compactor uses the agent's (same provider,
            # another model is the common case).
            summariser=lambda model, window: AgentScope1Summariser(
                model, self.compactor_formatter or formatter, window=window
            ),
        )
        window = setup.window
        with_summary = await agent.memory.get_memory(prepend_summary=True)
        without = await agent.memory.get_memory(prepend_summary=False)
        summary = ""
        if len(with_summary) > len(without):
            summary = with_summary[0].get_text_content() or ""

        async def system_prompt() -> str:
            return await self.memory_prompt(str(agent.sys_prompt), window.tokens, once=True)

        async def status(line: str) -> None:
            entry: dict[str, Any] = {METADATA_KEY: {"status": True}}  # a status, not a reply
            await agent.print(Msg(agent.name, line, "assistant", metadata=entry), True)

        return AgentScope1Session(
            agent,
            setup,
            data=agent_state(agent),
            system_prompt=system_prompt,
            summary=summary,
            status=status,
        )

    # ------------------------------------------------------------------- hooks
    async def pre_reasoning(self, agent: Any, kwargs: dict[str, Any]) -> None:
        """The engine's pipeline on ``agent.memory``; the next model call is marked as the
        reasoning call (the model proxy measures it). Returns None: 1.x passes copies; the
        memory is edited."""
        if await self.before_step(agent):
            self.mark_reasoning(agent)
        return None

    async def post_acting(self, agent: Any, kwargs: dict[str, Any], output: Any) -> None:
        """Stage 1: bound the tool result ``_acting`` just added to the memory."""
        tool_call = kwargs.get("tool_call")

        def fresh() -> FreshResult | None:
            # The newest stored result of the call (1.x's _acting just added it).
            newest = (m for m, _marks in reversed(agent.memory.content))
            return fresh_dict_result(newest, tool_call, self.read_entries.pop)

        await self.bound_result(agent, fresh, pruning_only=True)
        return None


def attached_hook(agent: Any) -> MemoryCompactionHook | None:
    """The hook attached to ``agent``, if any."""
    hook = attached_to(agent)
    return hook if isinstance(hook, MemoryCompactionHook) else None
