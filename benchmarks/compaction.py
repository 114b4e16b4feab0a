"""One compaction, ours against AgentScope 2.x's built-in, on the same seeded session.

Both use an instant scripted model (a fixed six-section summary, no latency), so the figure
is each pipeline's own cost: count, split, prompt, summary handling, archive (ours writes
and fsyncs the dialog archive before the context changes), commit.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from agentscope.message import Msg, TextBlock, ToolCallBlock
from agentscope.model import ChatResponse, ChatUsage
from agentscope.tool import ToolChoice

from benchmarks.sessions import WINDOW, builtin_twin, copy_context, make_agent
from copaw_context.core.context.report import Limits
from copaw_context.testing import ScriptedChatModel

__all__ = ["InstantModel", "bench_compaction"]

SUMMARY = "\n".join(
    [
        "## Goal",
        "- Keep the build green",
        "",
        "## Constraints & Preferences",
        "- Never modify vendor/ files",
        "",
        "## Progress",
        "### Done",
        "- [x] Reviewed the build logs",
        "### In Progress",
        "- [ ] Fixing the failing test",
        "### Blocked",
        "- (none)",
        "",
        "## Key Decisions",
        "- Read long outputs from their saved files",
        "",
        "## Next Steps",
        "1. Run the test suite",
        "",
        "## Critical Context",
        "- src/build/cache.py is where the cache key is computed",
    ]
)


class InstantModel(ScriptedChatModel):
    """Answers every call at once with :data:`SUMMARY` (text, or AgentScope's structured
    output tool call); records nothing, copies nothing."""

    async def _call_api(
        self,
        model_name: str,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> ChatResponse:
        usage = ChatUsage(input_tokens=1, output_tokens=1, time=0.0)
        if tools and tools[0].get("function", {}).get("name") == "generate_structured_output":
            schema = tools[0]["function"].get("parameters", {})
            values = {
                key: [SUMMARY]
                if isinstance(spec, dict) and spec.get("type") == "array"
                else SUMMARY
                for key, spec in schema.get("properties", {}).items()
            }
            block: Any = ToolCallBlock(
                id="summary", name="generate_structured_output", input=json.dumps(values)
            )
        else:
            block = TextBlock(text=SUMMARY)
        return ChatResponse(content=[block], is_last=True, usage=usage)


async def _ours(workspace: Path, context: list[Msg]) -> tuple[float, int, int]:
    model = InstantModel([], context_size=WINDOW)
    agent, hook, session = await make_agent(workspace, "estimate", context, model)
    engine = hook.engine
    await engine.before_reasoning(session, limits=Limits(10**12, WINDOW // 10))  # warm counts
    await engine.input_meter.measure(session)
    before = len(context)
    started = time.perf_counter()
    event = await engine.before_reasoning(session)
    seconds = time.perf_counter() - started
    if event is None or event.kind != "compaction":
        raise RuntimeError(f"expected a compaction, got {event}")
    return seconds, before, len(agent.state.context)


async def _builtin(context: list[Msg]) -> tuple[float, int, int]:
    model = InstantModel([], context_size=WINDOW)
    agent = builtin_twin(context, WINDOW, model)
    before = len(context)
    started = time.perf_counter()
    await agent.compress_context()
    seconds = time.perf_counter() - started
    return seconds, before, len(agent.state.context)


def bench_compaction(root: Path, context: list[Msg], repeat: int) -> dict[str, Any]:
    """Median seconds of one compaction of ``context``: ours and the built-in."""
    ours: list[float] = []
    builtin: list[float] = []
    kept: dict[str, tuple[int, int]] = {}
    for index in range(repeat):
        seconds, before, after = asyncio.run(
            _ours(root / f"compact-{index}", copy_context(context))
        )
        ours.append(seconds)
        kept["ours"] = (before, after)
        seconds, before, after = asyncio.run(_builtin(copy_context(context)))
        builtin.append(seconds)
        kept["builtin"] = (before, after)
    return {
        "ours_s": statistics.median(ours),
        "builtin_s": statistics.median(builtin),
        "messages": kept,
        "repeat": repeat,
    }
