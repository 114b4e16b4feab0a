"""The invariant suite's host: AgentScope 1.x ``ReActAgent`` with the hook attached."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentscope.agent import ReActAgent
from agentscope.message import Msg
from agentscope.tool import Toolkit, ToolResponse

from copaw_context.agentscope1 import MemoryCompactionHook, part_keys
from copaw_context.agentscope1.messages import METADATA_KEY
from copaw_context.agentscope1.session import HIDDEN_MARKS
from copaw_context.core.config import RunningConfig
from copaw_context.core.events import EventCallback
from copaw_context.core.summary import render_summary_message
from copaw_context.testing import ScriptedChatModel
from tests.invariants.kit import archived_records

__all__ = ["As1Kit", "tool_function"]


@dataclass
class _Reply:
    text: str
    status: list[str] = field(default_factory=list)


def tool_function(function: Callable[..., str]) -> Callable[..., ToolResponse]:
    """A plain function returning text as a 1.x tool function."""

    @functools.wraps(function)
    def tool(*args: Any, **kwargs: Any) -> ToolResponse:
        return ToolResponse(content=[{"type": "text", "text": function(*args, **kwargs)}])

    return tool


def _is_status(msg: Msg) -> bool:
    entry = (msg.metadata or {}).get(METADATA_KEY)
    return isinstance(entry, dict) and entry.get("status") is True


class As1Kit:
    major = 1
    form = "agentscope1.Msg"

    def __init__(self) -> None:
        self.printed: dict[int, list[Msg]] = {}

    def hook(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        compactor: Any | None = None,
        on_event: EventCallback | None = None,
    ) -> MemoryCompactionHook:
        return MemoryCompactionHook(
            config,
            workspace,
            compactor_model=compactor,
            compactor_formatter=getattr(compactor, "formatter", None),
            on_event=on_event,
        )

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
    ) -> ReActAgent:
        toolkit = Toolkit()
        for function in tools:
            toolkit.register_tool_function(tool_function(function))
        agent = ReActAgent(
            name="assistant",
            sys_prompt=system_prompt,
            model=model,
            formatter=model.formatter,
            toolkit=toolkit,
            max_iters=50,
        )
        agent.set_console_output_enabled(False)
        printed = self.printed.setdefault(id(agent), [])

        def record(agent: Any, kwargs: dict[str, Any]) -> None:
            if kwargs.get("last", True):
                printed.append(kwargs["msg"])

        agent.register_instance_hook("pre_print", "invariants", record)
        await hook.attach(agent)
        return agent

    async def ask(self, agent: ReActAgent, text: str) -> _Reply:
        printed = self.printed.setdefault(id(agent), [])
        start = len(printed)
        reply = await agent(Msg("user", text, "user"))
        status = [str(m.content) for m in printed[start:] if _is_status(m)]
        return _Reply(reply.get_text_content() or "", status)

    async def seed(self, agent: ReActAgent, turns: int, result_bytes: int = 1500) -> None:
        history: list[Msg] = []
        for t in range(turns):
            call_id = f"seed_call_{t}"
            output = "build ok line\n" * (result_bytes // 14)
            history += [
                Msg("user", f"Request {t}: check module m{t}. Never touch prod.yaml.", "user"),
                Msg(
                    "assistant",
                    [
                        {"type": "text", "text": f"Checking m{t}."},
                        {
                            "type": "tool_use",
                            "id": call_id,
                            "name": "run_build",
                            "input": {"target": f"m{t}"},
                        },
                    ],
                    "assistant",
                ),
                Msg(
                    "system",
                    [
                        {
                            "type": "tool_result",
                            "id": call_id,
                            "name": "run_build",
                            "output": [{"type": "text", "text": output}],
                        }
                    ],
                    "system",
                ),
                Msg("assistant", f"Module m{t} builds.", "assistant"),
            ]
        await agent.memory.add(history)

    async def set_summary(self, agent: ReActAgent, text: str) -> None:
        message = render_summary_message(text, [("dialog/2026-11-28.jsonl", 12)])
        await agent.memory.update_compressed_summary(message)

    async def summary(self, agent: ReActAgent) -> str:
        with_summary = await agent.memory.get_memory(prepend_summary=True)
        without = await agent.memory.get_memory(prepend_summary=False)
        return with_summary[0].get_text_content() or "" if len(with_summary) > len(without) else ""

    def _context(self, agent: ReActAgent) -> list[Msg]:
        return [m for m, marks in agent.memory.content if not HIDDEN_MARKS.intersection(marks)]

    def context_keys(self, agent: ReActAgent) -> list[str]:
        return [key for m in self._context(agent) for key in part_keys(m)]

    def context_roles(self, agent: ReActAgent) -> list[str]:
        return [m.role for m in self._context(agent)]

    def archived_keys(self, workspace: Path) -> list[str]:
        records = archived_records(workspace)
        return [key for r in records for key in part_keys(Msg.from_dict(r["message"]))]
