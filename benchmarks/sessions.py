"""Seeded AgentScope 2.x sessions for the per-step benchmark, and the agents around them.

A session of N messages mixes user requests, assistant text, single tool calls and parallel
tool calls (2 to 4); tool outputs are 200 B to 200 KB (log-uniform), 30% of their lines
Chinese. Seeding runs our own stage 1 on every result and stage 2 every few messages, so the
stored context is what a real session holds (offloaded files written with fsync off: seeding
is not measured).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentscope.agent import Agent, InjectionConfig
from agentscope.message import (
    AssistantMsg,
    Msg,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultState,
    UserMsg,
)
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolBase, Toolkit

from benchmarks.corpus import tool_output
from copaw_context import MemoryCompactionHook, RunningConfig
from copaw_context.agentscope2.messages import METADATA_KEY
from copaw_context.agentscope2.session import AgentScope2Session
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.workspace import durable
from copaw_context.testing import ScriptedChatModel

__all__ = [
    "AGENT_NAME",
    "Call",
    "Step",
    "WINDOW",
    "builtin_twin",
    "make_agent",
    "make_steps",
    "no_fsync",
    "run_stage1",
    "seed_session",
]

AGENT_NAME = "assistant"
WINDOW = 131_072
_TOOLS = ("shell", "read_logs", "search_code", "fetch_page")
_SYSTEM_PROMPT = "You are a build engineer's assistant. Be precise. " * 20
_POOL_BYTES = 2_000_000


@dataclass(frozen=True)
class Call:
    """One tool call of a step: tool name, raw JSON input, raw output (before stage 1)."""

    call_id: str
    name: str
    tool_input: str
    output: str


@dataclass(frozen=True)
class Step:
    """One step: an assistant message with one or more tool calls and their results."""

    calls: tuple[Call, ...]


class _Outputs:
    """Tool outputs of seeded sizes cut from one seeded pool of log lines (fast to make)."""

    def __init__(self, seed: int) -> None:
        self._pool = tool_output(_POOL_BYTES, seed=seed)
        self._rng = random.Random(seed)

    def next(self) -> str:
        size = int(math.exp(self._rng.uniform(math.log(200), math.log(200_000))))
        start = self._rng.randrange(0, len(self._pool) - size)
        start = self._pool.find("\n", start) + 1
        data = self._pool[start : start + size].encode("utf-8")[:size]
        return data.decode("utf-8", errors="ignore")


def _calls(rng: random.Random, outputs: _Outputs, prefix: str, count: int) -> tuple[Call, ...]:
    calls = []
    for k in range(count):
        name = rng.choice(_TOOLS)
        tool_input = json.dumps({"query": f"{name} {rng.randint(1, 10**6)}"})
        calls.append(Call(f"{prefix}-{k}", name, tool_input, outputs.next()))
    return tuple(calls)


def make_steps(count: int, seed: int = 7) -> list[Step]:
    """The measured steps: 70% one tool call, 30% two to four in parallel."""
    rng = random.Random(seed)
    outputs = _Outputs(seed)
    steps = []
    for i in range(count):
        width = 1 if rng.random() < 0.7 else rng.randint(2, 4)
        steps.append(Step(_calls(rng, outputs, f"step{seed}-{i}", width)))
    return steps


def _text(rng: random.Random, low: int, high: int) -> str:
    if rng.random() < 0.3:
        return "".join(
            rng.choice("构建测试缓存编译失败通过请求文件目录配置") for _ in range(low // 3)
        )
    return " ".join(
        rng.choice(("build", "the", "test", "cache", "fix", "log")) for _ in range(high // 6)
    )


def _tool_result(call: Call, output: str, meta: dict[str, Any]) -> ToolResultBlock:
    block = ToolResultBlock(
        id=call.call_id, name=call.name, output=output, state=ToolResultState.SUCCESS
    )
    block.metadata[METADATA_KEY] = meta
    return block


async def run_stage1(hook: MemoryCompactionHook, session: AgentScope2Session, step: Step) -> Msg:
    """Our stage 1 on each result of ``step``; the assistant message to append."""
    blocks: list[Any] = [
        ToolCallBlock(id=c.call_id, name=c.name, input=c.tool_input) for c in step.calls
    ]
    for call in step.calls:
        parts, meta = await hook.engine.on_tool_result(
            session, call.name, call.tool_input, [call.output], {}
        )
        blocks.append(_tool_result(call, "\n".join(p for p in parts if isinstance(p, str)), meta))
    return AssistantMsg(AGENT_NAME, content=blocks)


@contextlib.contextmanager
def no_fsync() -> Iterator[None]:
    """Skip fsyncs while seeding (seeding is not measured; files are still written)."""
    saved = durable._sync_data, durable._sync_folder
    durable._sync_data = durable._sync_folder = lambda fd: None
    try:
        yield
        durable.flush()  # the seeding's background syncs end before the measured steps
    finally:
        durable._sync_data, durable._sync_folder = saved


def config(counter: str, compactor: str = "llm", folders: str = "") -> RunningConfig:
    """The benchmark's settings; ``folders``: a suffix for the dialog and memory folders (runs
    sharing one workspace, and so its saved outputs, each archive into folders of their own)."""
    light: dict[str, Any] = {"token_counter": counter, "compactor": compactor}
    running: dict[str, Any] = {"max_input_length": WINDOW, "light_context_config": light}
    if folders:
        light["dialog_path"] = f"dialog-{folders}"
        running["memory"] = {"memory_dir": f"memory-{folders}"}
    return parse_running_config({"running": running})


def _tools() -> list[ToolBase]:
    def shell(query: str) -> str:
        """Run a shell command.

        Args:
            query (`str`): The command.
        """
        return query

    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="benchmark")
    return [FunctionTool(shell, permission=allow)]  # type: ignore[arg-type]


async def make_agent(
    workspace: Path,
    counter: str,
    context: list[Msg],
    model: ScriptedChatModel | None = None,
    folders: str = "",
) -> tuple[Agent, MemoryCompactionHook, AgentScope2Session]:
    """A real AgentScope 2.x agent with our middleware over ``context`` (used as is);
    ``folders``: see :func:`config`."""
    hook = MemoryCompactionHook(config(counter, folders=folders), workspace)
    agent = Agent(
        name=AGENT_NAME,
        system_prompt=_SYSTEM_PROMPT,
        model=model or ScriptedChatModel([], context_size=WINDOW),
        toolkit=Toolkit(tools=[*await hook.list_tools(), *_tools()]),
        middlewares=[hook],
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    agent.state.context = context
    return agent, hook, await hook.session(agent)


def builtin_twin(
    context: list[Msg], context_size: int, model: ScriptedChatModel | None = None
) -> Agent:
    """The same agent without our middleware: AgentScope's built-in compression in charge."""
    agent = Agent(
        name=AGENT_NAME,
        system_prompt=_SYSTEM_PROMPT,
        model=model or ScriptedChatModel([], context_size=context_size),
        toolkit=Toolkit(tools=_tools()),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    agent.state.context = context
    return agent


async def seed_session(workspace: Path, n_messages: int, seed: int = 1) -> list[Msg]:
    """A context of ``n_messages`` messages as our pipeline leaves it (stage 1 and 2 done)."""
    rng = random.Random(seed)
    outputs = _Outputs(seed + 1000)
    context: list[Msg] = []
    agent, hook, session = await make_agent(workspace, "estimate", context)
    with no_fsync():
        for index in range(n_messages):
            kind = rng.random() if index else 0.0
            if kind < 0.15:
                context.append(UserMsg("user", _text(rng, 30, 400)))
            elif kind < 0.40:
                context.append(
                    AssistantMsg(AGENT_NAME, content=[TextBlock(text=_text(rng, 60, 800))])
                )
            else:
                width = 1 if kind < 0.80 else rng.randint(2, 4)
                step = Step(_calls(rng, outputs, f"seed{seed}-{index}", width))
                context.append(await run_stage1(hook, session, step))
            if index % 10 == 9:
                await hook.engine.input_meter.measure(session)
                await hook.engine.pruner.prune_old(session)
        await hook.engine.input_meter.measure(session)
        await hook.engine.pruner.prune_old(session)
    return context


def copy_context(context: list[Msg]) -> list[Msg]:
    """A deep copy (a session another engine may change)."""
    return copy.deepcopy(context)
