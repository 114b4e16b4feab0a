"""Measure the hook's cost per agent step (not a test: prints numbers, asserts nothing).

    .venv/bin/python scripts/bench.py [--steps 200]

Runs the demo session twice with the scripted model: once with MemoryCompactionHook on a
small window (pruning, counting, compaction, archive) and once with no middleware and a
huge window, and reports wall time per model call and the hook's share.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from agentscope.agent import Agent, ContextConfig, InjectionConfig
from agentscope.message import UserMsg
from agentscope.tool import Toolkit

from copaw_context.cli.demo import demo_config, demo_policy, make_demo_tools, run_demo
from copaw_context.testing import ScriptedChatModel


async def baseline(steps: int) -> tuple[float, int]:
    """The same session without copaw-context (and no built-in compression)."""
    policy = demo_policy(steps)
    model = ScriptedChatModel([policy] * (steps * 4), context_size=10_000_000)
    agent = Agent(
        name="assistant",
        system_prompt="You are a build engineer's assistant.",
        model=model,
        toolkit=Toolkit(tools=make_demo_tools()),
        context_config=ContextConfig(tool_result_limit=10_000_000),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    started = time.perf_counter()
    for turn in policy.user_turns():
        await agent.reply(UserMsg("user", turn))
    return time.perf_counter() - started, len(model.calls)


async def with_hook(steps: int, workspace: Path) -> tuple[float, int, int]:
    started = time.perf_counter()
    result = await run_demo(workspace, steps=steps, config=demo_config(), out=None)
    compactions = sum(1 for e in result.events if e.kind == "compaction")
    return time.perf_counter() - started, len(result.steps), compactions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    hooked: list[float] = []
    plain: list[float] = []
    calls = compactions = base_calls = 0
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            seconds, calls, compactions = asyncio.run(with_hook(args.steps, Path(tmp) / "ws"))
            hooked.append(seconds)
        seconds, base_calls = asyncio.run(baseline(args.steps))
        plain.append(seconds)
    h, p = statistics.median(hooked), statistics.median(plain)
    print(f"steps scripted: {args.steps}; median of {args.repeat} runs")
    print(
        f"with hook:    {h:.2f} s for {calls} model calls ({1000 * h / calls:.1f} ms/call), "
        f"{compactions} compactions"
    )
    print(
        f"without hook: {p:.2f} s for {base_calls} model calls "
        f"({1000 * p / base_calls:.1f} ms/call)"
    )
    print(
        "note: without the hook the context grows unbounded, so the scripted model's own "
        "per-call copying grows too; the difference is not all hook cost."
    )


if __name__ == "__main__":
    main()
