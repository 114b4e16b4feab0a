"""Small helpers for the AgentScope 1.x adapter's tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentscope.agent import ReActAgent
from agentscope.tool import Toolkit

from copaw_context.agentscope1 import MemoryCompactionHook
from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.testing import ScriptedChatModel, UsageFunction
from tests.reliability.as1_driver import tool_function

__all__ = ["build_agent", "settings"]


def settings(window: int = 200_000, **light: Any) -> RunningConfig:
    """A config with the memory summariser off and an exact counter."""
    memory = light.pop("memory", {"summarise_on_compact": False})
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "memory": memory,
                "light_context_config": {"token_counter": "o200k_base", **light},
            }
        }
    )


async def build_agent(
    workspace: Path,
    steps: Sequence[Any],
    tools: Sequence[Callable[..., str]] = (),
    *,
    config: RunningConfig | None = None,
    context_size: int = 200_000,
    stream: bool = False,
    sys_prompt: str = "You are a careful assistant.",
    usage: UsageFunction | None = None,
    **agent_options: Any,
) -> tuple[ReActAgent, MemoryCompactionHook, ScriptedChatModel]:
    """A real 1.x ReActAgent with a scripted model and the hook attached."""
    model = ScriptedChatModel(steps, context_size=context_size, stream=stream, usage=usage)
    toolkit = Toolkit()
    for function in tools:
        toolkit.register_tool_function(tool_function(function))
    agent = ReActAgent(
        name="assistant",
        sys_prompt=sys_prompt,
        model=model,
        formatter=model.formatter,
        toolkit=toolkit,
        **agent_options,
    )
    agent.set_console_output_enabled(False)
    hook = MemoryCompactionHook(config or settings(), workspace)
    await hook.attach(agent)
    return agent, hook, model
