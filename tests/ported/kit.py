"""The ported peer cases' kit: scripted turns on a real agent of either major with every
model input checked (valid for every provider, within the window), tools with fixed outputs,
and hand-built host histories (the shapes peers' formatter and history tests build)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from copaw_context import installed_agentscope_major
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from tests.reliability.agent_session import agent_config
from tests.reliability.drivers import HostDriver
from tests.reliability.host_history import (
    assistant,
    call,
    result,
    results,
    text,
    thinking,
    user,
)
from tests.reliability.invariants import StepFigures, check_model_input

__all__ = [
    "AS2",
    "Run",
    "assistant",
    "call",
    "fixed_tool",
    "numbered",
    "play",
    "recover",
    "result",
    "results",
    "run_turns",
    "seed",
    "text",
    "text_of",
    "thinking",
    "user",
]

AS2 = installed_agentscope_major() >= 2


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def fixed_tool(text: str, name: str = "fetch") -> Callable[..., str]:
    """A tool named ``name`` that always returns ``text``."""

    def tool(index: int = 0) -> str:
        """Return the output.

        Args:
            index (`int`): Which one.
        """
        return text

    tool.__name__ = name
    return tool


def numbered(index: int, size: int) -> str:
    """``size`` characters of numbered rows (every row different)."""
    line = f"out {index:03d} row {{r:05d}} payload payload payload\n"
    return "".join(line.format(r=r) for r in range(size // len(line) + 1))[:size]


@dataclass
class Run:
    seen: list[list[dict[str, Any]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    figures: StepFigures = field(default_factory=StepFigures)

    def tool_texts(self, call: int = -1) -> list[str]:
        return [text_of(m.get("content")) for m in self.seen[call] if m.get("role") == "tool"]


async def run_turns(
    driver: HostDriver,
    workspace: Path,
    window: int,
    turns: Sequence[tuple[str | Sequence[str], Sequence[Any]]],
    tools: Sequence[Callable[..., str]] = (),
    *,
    compactor: str = "extractive",
    light: dict[str, Any] | None = None,
    keep_agent: list[Any] | None = None,
    unique_ids: bool = True,
    system_prompt: str | None = None,
    history: list[Any] | None = None,
) -> Run:
    """``turns``: (request, steps) where a step is ("text", str), ("tools", [ToolCall]) or
    ("thinking", (thinking, text)); ``history``: host messages the agent holds first."""
    run = Run()

    def checked(step: tuple[str, Any]) -> Any:
        async def answer(call: Any) -> list[Any]:
            formatted = await driver.provider_inputs(call)
            try:
                check_model_input(
                    formatted, driver.tool_schemas(call), window, run.figures, unique_ids=unique_ids
                )
            except AssertionError as error:
                run.problems.append(f"call {len(run.seen)}: {error}")
            run.seen.append(formatted["openai"])
            kind, value = step
            if kind == "thinking":
                return driver.text_step(value[1], thinking=value[0])
            return driver.text_step(value) if kind == "text" else driver.tool_step(value)

        return answer

    steps = [checked(s) for _, ss in turns for s in ss]
    hook = driver.hook(agent_config(window, compactor, **(light or {})), workspace)
    model = driver.model(steps, context_size=window)
    prompt = {} if system_prompt is None else {"system_prompt": system_prompt}
    agent = await driver.agent(hook, model, list(tools), **prompt)
    if history:
        await seed(agent, history)
    if keep_agent is not None:
        keep_agent.extend([agent, hook])
    for request, _ in turns:
        run.replies.append(await driver.ask(agent, request))
    return run


def play(
    driver: HostDriver,
    workspace: Path,
    window: int,
    turns: Sequence[tuple[str | Sequence[str], Sequence[Any]]],
    tools: Sequence[Callable[..., str]] = (),
    **options: Any,
) -> Run:
    """``run_turns`` from a synchronous test."""
    return asyncio.run(run_turns(driver, workspace, window, turns, tools, **options))


def recover(workspace: Path, shown: str) -> str | None:
    """The full text the notice ending ``shown`` names (None: no notice)."""
    parsed = parse_truncation_notice(shown)
    if parsed is None:
        return None
    path = Path(parsed[1].file_path)
    return (path if path.is_absolute() else workspace / path).read_text(encoding="utf-8")


# --- hand-built host histories for either major -------------------------------------------


# call, result, results, text, thinking, user, assistant: from tests.reliability.host_history


async def seed(agent: Any, history: list[Any]) -> None:
    """Put ``history`` into the agent's memory as the host would hold it."""
    if AS2:
        agent.state.context = history
    else:
        await agent.memory.add(history)
