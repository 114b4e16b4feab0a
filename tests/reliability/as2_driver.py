"""The reliability suite's AgentScope 2.x driver: ``Agent`` with ``MemoryCompactionHook``."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from agentscope.agent import Agent, InjectionConfig
from agentscope.event import CustomEvent
from agentscope.formatter import (
    AnthropicChatFormatter,
    DashScopeChatFormatter,
    OpenAIChatFormatter,
)
from agentscope.message import (
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    UserMsg,
)
from agentscope.tool import Toolkit

from copaw_context import MemoryCompactionHook, pin_message
from copaw_context.agentscope2.stream import STATUS_EVENT
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.report import TokenReport
from copaw_context.core.events import EventCallback
from copaw_context.core.summary import render_summary_message
from copaw_context.testing import ModelCall, ScriptedChatModel
from tests.agent_history import seeded_history
from tests.helpers import allow
from tests.reliability.drivers import SEED_SUMMARY_SOURCES, Reply, ToolCall, archived_records

__all__ = ["As2Driver"]

_ids = itertools.count(1)


def _keys(messages: Sequence[Msg]) -> list[str]:
    return [f"{m.id}/{b.type}:{b.id}" for m in messages for b in m.content]


class As2Driver:
    name = "agentscope2"

    def hook(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        compactor: Any | None = None,
        on_event: EventCallback | None = None,
    ) -> MemoryCompactionHook:
        return MemoryCompactionHook(config, workspace, compactor_model=compactor, on_event=on_event)

    def model(self, steps: Sequence[Any], *, context_size: int) -> ScriptedChatModel:
        return ScriptedChatModel(steps, context_size=context_size)

    async def agent(
        self,
        hook: MemoryCompactionHook,
        model: ScriptedChatModel,
        tools: Sequence[Callable[..., str]] = (),
        *,
        system_prompt: str = "You are a careful assistant.",
        name: str = "assistant",
    ) -> Agent:
        return Agent(
            name=name,
            system_prompt=system_prompt,
            model=model,
            toolkit=Toolkit(tools=[*await hook.list_tools(), *map(allow, tools)]),
            middlewares=[hook],
            injection_config=InjectionConfig(inject_runtime_state=False),
        )

    async def ask(self, agent: Agent, text: str | Sequence[str], *, pinned: bool = False) -> str:
        content = text if isinstance(text, str) else [TextBlock(text=t) for t in text]
        request = UserMsg("user", content)
        if pinned:
            pin_message(request)
        reply = await agent.reply(request)
        return reply.get_text_content() or ""

    async def reply(self, agent: Agent, text: str) -> Reply:
        reply = Reply("")
        async for item in agent.reply_stream(UserMsg("user", text), yield_final_msg=True):
            if isinstance(item, CustomEvent) and item.name == STATUS_EVENT:
                reply.status.append(str(item.value["text"]))
            elif isinstance(item, Msg):
                reply.text = item.get_text_content() or ""
        return reply

    async def seed(self, agent: Agent, turns: int, result_bytes: int = 1500) -> None:
        agent.state.context = [*agent.state.context, *seeded_history(turns, result_bytes)]

    async def set_summary(self, agent: Agent, text: str) -> None:
        agent.state.summary = render_summary_message(text, SEED_SUMMARY_SOURCES)

    async def summary(self, agent: Agent) -> str:
        return str(agent.state.summary)

    def text_step(self, text: str, thinking: str = "") -> list[Any]:
        head: list[Any] = [ThinkingBlock(thinking=thinking)] if thinking else []
        return [*head, TextBlock(text=text)]

    def tool_step(self, calls: Sequence[ToolCall], thinking: str = "") -> list[Any]:
        head: list[Any] = [ThinkingBlock(thinking=thinking)] if thinking else []
        return [
            *head,
            *(
                ToolCallBlock(
                    id=call_id or f"as2_call_{next(_ids)}",
                    name=name,
                    input=json.dumps(arguments, ensure_ascii=False),
                )
                for name, arguments, call_id in calls
            ),
        ]

    def context_keys(self, agent: Agent) -> list[str]:
        return _keys(agent.state.context)

    def context_roles(self, agent: Agent) -> list[str]:
        return [m.role for m in agent.state.context]

    def archived_keys(self, workspace: Path) -> list[str]:
        return _keys([Msg.model_validate(r["message"]) for r in archived_records(workspace)])

    async def provider_inputs(self, call: ModelCall) -> dict[str, list[dict[str, Any]]]:
        messages = list(call.messages)
        return {
            "openai": await OpenAIChatFormatter().format(messages),
            "anthropic": await AnthropicChatFormatter().format(messages),
            "dashscope": await DashScopeChatFormatter().format(messages),
        }

    def tool_schemas(self, call: ModelCall) -> str:
        return json.dumps(call.tools, ensure_ascii=False) if call.tools else ""

    async def engine_state(
        self, hook: MemoryCompactionHook, agent: Agent
    ) -> MutableMapping[str, Any]:
        return (await hook.session(agent)).state

    async def report(self, hook: MemoryCompactionHook, agent: Agent) -> TokenReport:
        return await hook.report(agent)

    def save_state(self, agent: Agent) -> str:
        return agent.state.model_dump_json()

    async def load_state(self, agent: Agent, saved: str) -> None:
        agent.state = type(agent.state).model_validate_json(saved)
