"""The invariant suite's host: AgentScope 2.x ``Agent`` with the middleware."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentscope.agent import Agent, InjectionConfig
from agentscope.event import CustomEvent
from agentscope.message import AssistantMsg, Msg, TextBlock, ToolCallBlock, ToolResultBlock, UserMsg
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit

from copaw_context.agentscope2 import MemoryCompactionHook
from copaw_context.agentscope2.stream import STATUS_EVENT
from copaw_context.core.config import RunningConfig
from copaw_context.core.events import EventCallback
from copaw_context.core.summary import render_summary_message
from copaw_context.testing import ScriptedChatModel
from tests.invariants.kit import archived_records

__all__ = ["As2Kit"]

_ALLOW = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="test")


@dataclass
class _Reply:
    text: str
    status: list[str] = field(default_factory=list)


def _allowed(function: Callable[..., str]) -> FunctionTool:
    return FunctionTool(function, permission=_ALLOW)


def _keys(messages: Sequence[Msg]) -> list[str]:
    return [f"{m.id}/{b.type}:{b.id}" for m in messages for b in m.content]


class As2Kit:
    major = 2
    form = "agentscope2.Msg"

    def hook(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        compactor: Any | None = None,
        on_event: EventCallback | None = None,
    ) -> MemoryCompactionHook:
        return MemoryCompactionHook(config, workspace, compactor_model=compactor, on_event=on_event)

    def model(
        self, steps: Sequence[Any], *, context_size: int, stream: bool = False
    ) -> ScriptedChatModel:
        return ScriptedChatModel(steps, context_size=context_size, stream=stream)

    async def agent(
        self,
        hook: MemoryCompactionHook,
        model: ScriptedChatModel,
        tools: Sequence[Callable[..., str]] = (),
        *,
        system_prompt: str = "You are a careful assistant.",
    ) -> Agent:
        return Agent(
            name="assistant",
            system_prompt=system_prompt,
            model=model,
            toolkit=Toolkit(tools=[*await hook.list_tools(), *map(_allowed, tools)]),
            middlewares=[hook],
            injection_config=InjectionConfig(inject_runtime_state=False),
        )

    async def ask(self, agent: Agent, text: str) -> _Reply:
        reply = _Reply("")
        async for item in agent.reply_stream(UserMsg("user", text), yield_final_msg=True):
            if isinstance(item, CustomEvent) and item.name == STATUS_EVENT:
                reply.status.append(str(item.value["text"]))
            elif isinstance(item, Msg):
                reply.text = item.get_text_content() or ""
        return reply

    async def seed(self, agent: Agent, turns: int, result_bytes: int = 1500) -> None:
        history: list[Msg] = []
        for t in range(turns):
            request = f"Request {t}: check module m{t}. Never touch prod.yaml."
            history.append(UserMsg("user", request))
            call_id = f"seed_call_{t}"
            history.append(
                AssistantMsg(
                    "assistant",
                    [
                        TextBlock(text=f"Checking m{t}."),
                        ToolCallBlock(
                            id=call_id, name="run_build", input=json.dumps({"target": f"m{t}"})
                        ),
                        ToolResultBlock(
                            id=call_id,
                            name="run_build",
                            output=[TextBlock(text=("build ok line\n" * (result_bytes // 14)))],
                            state="success",
                        ),
                        TextBlock(text=f"Module m{t} builds."),
                    ],
                )
            )
        agent.state.context = [*agent.state.context, *history]

    async def set_summary(self, agent: Agent, text: str) -> None:
        agent.state.summary = render_summary_message(text, [("dialog/2026-11-28.jsonl", 12)])

    async def summary(self, agent: Agent) -> str:
        return str(agent.state.summary)

    def context_keys(self, agent: Agent) -> list[str]:
        return _keys(agent.state.context)

    def context_roles(self, agent: Agent) -> list[str]:
        return [m.role for m in agent.state.context]

    def archived_keys(self, workspace: Path) -> list[str]:
        return _keys([Msg.model_validate(r["message"]) for r in archived_records(workspace)])
