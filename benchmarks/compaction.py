"""One compaction, ours against AgentScope 2.x's built-in, on the same seeded session.

Both use an instant scripted model (a fixed six-section summary, no latency), so the figure
is each pipeline's own cost: count, split, prompt, summary handling, archive (ours writes
and fsyncs the dialog archive before the context changes), commit. Measured per session size
and per counter of ours (bytes/4, o200k; the built-in always counts bytes/4): wall time, the
process's CPU time (every thread: the worker threads' fact extraction and packing too; the
fsync waits are not CPU) and the model calls each pipeline made.
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentscope.message import Msg, TextBlock, ToolCallBlock
from agentscope.model import ChatResponse, ChatUsage
from agentscope.tool import ToolChoice

from benchmarks.cache_script import SUMMARY
from benchmarks.sessions import WINDOW, builtin_twin, copy_context, make_agent
from benchmarks.steps import COUNTERS
from copaw_context.core.context.report import Limits
from copaw_context.core.summary.errors import forget_lines
from copaw_context.testing import ScriptedChatModel

__all__ = ["InstantModel", "Run", "bench_compaction", "our_compaction", "summary_response"]


class InstantModel(ScriptedChatModel):
    """Answers every call at once with :data:`SUMMARY` (text, or AgentScope's structured
    output tool call); records nothing, copies nothing, counts its calls (``call_count``)."""

    call_count = 0

    async def _call_api(
        self,
        model_name: str,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> ChatResponse:
        self.call_count += 1
        return summary_response(tools)


_STRUCTURED = "generate_structured_output"


def summary_response(tools: list[dict[str, Any]] | None) -> ChatResponse:
    """:data:`SUMMARY` as a compactor's answer: AgentScope's structured-output tool call when
    that tool is offered (each field the summary), else text."""
    usage = ChatUsage(input_tokens=1, output_tokens=1, time=0.0)
    offered = [t for t in tools or [] if t.get("function", {}).get("name") == _STRUCTURED]
    if offered:
        schema = offered[0]["function"].get("parameters", {})
        values = {
            key: [SUMMARY] if isinstance(spec, dict) and spec.get("type") == "array" else SUMMARY
            for key, spec in schema.get("properties", {}).items()
        }
        block: Any = ToolCallBlock(id="summary", name=_STRUCTURED, input=json.dumps(values))
    else:
        block = TextBlock(text=SUMMARY)
    return ChatResponse(content=[block], is_last=True, usage=usage)


@dataclass(frozen=True)
class Run:
    """One compaction: wall and CPU seconds, messages before and after, model calls."""

    wall_s: float
    cpu_s: float
    before: int
    after: int
    calls: int
    reasons: tuple[str, ...] = ()


async def our_compaction(
    workspace: Path,
    context: list[Msg],
    counter: str,
    run: str,
    profiler: cProfile.Profile | None = None,
) -> Run:
    """One compaction by our middleware in ``workspace``, the workspace that seeded
    ``context``: its saved outputs are this store's own, so the compactor reads their tails
    as in a real session (``run`` names this run's own dialog and memory folders);
    ``profiler`` is enabled around the compaction alone."""
    model = InstantModel([], context_size=WINDOW)
    agent, hook, session = await make_agent(workspace, counter, context, model, folders=run)
    engine = hook.engine
    await engine.before_reasoning(session, limits=Limits(10**12, WINDOW // 10))  # warm counts
    await engine.input_meter.measure(session)
    before = len(context)
    forget_lines()  # each run as cold as the first: the sessions are the same
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    event = await engine.before_reasoning(session)
    if profiler is not None:
        profiler.disable()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if event is None or event.kind != "compaction":
        raise RuntimeError(f"expected a compaction, got {event}")
    reasons = event.compactor_calls
    return Run(seconds, cpu, before, len(agent.state.context), model.call_count, reasons)


async def _builtin(context: list[Msg]) -> Run:
    model = InstantModel([], context_size=WINDOW)
    agent = builtin_twin(context, WINDOW, model)
    before = len(context)
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    await agent.compress_context()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return Run(seconds, cpu, before, len(agent.state.context), model.call_count)


def _median(runs: list[Run]) -> dict[str, Any]:
    last = runs[-1]
    return {
        "wall_s": statistics.median(r.wall_s for r in runs),
        "cpu_s": statistics.median(r.cpu_s for r in runs),
        "messages": (last.before, last.after),
        "calls": last.calls,
        "reasons": list(last.reasons),
    }


def bench_compaction(
    root: Path,
    sessions: dict[int, list[Msg]],
    repeat: int,
    counters: tuple[str, ...] = COUNTERS,
) -> dict[str, Any]:
    """Median wall and CPU seconds of one compaction of each session (by its size N, seeded
    in ``root / f"seed-{N}"``, where ours runs too): ours with each counter, and the
    built-in; the model calls of each."""
    rows: list[dict[str, Any]] = []
    for n, context in sorted(sessions.items()):
        builtin = [asyncio.run(_builtin(copy_context(context))) for _ in range(repeat)]
        for counter in counters:
            ours = [
                asyncio.run(
                    our_compaction(
                        root / f"seed-{n}", copy_context(context), counter, f"{counter}-{i}"
                    )
                )
                for i in range(repeat)
            ]
            rows.append(
                {"n": n, "counter": counter, "ours": _median(ours), "builtin": _median(builtin)}
            )
    return {"rows": rows, "repeat": repeat}
