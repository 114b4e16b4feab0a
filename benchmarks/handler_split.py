"""The design card's ``AsMsgHandler`` split against AgentScope 2.x's own, on the same messages.

AgentScope's ``Agent._split_context_for_compression`` walks back from the newest message,
counting the tail at each step with the model's counter (bytes/4 for the scripted model);
``AsMsgHandler.context_check`` (one handler kept between calls, its ledger warm after the
first) plans the pair-safe split with bytes/4 too. Each is timed at the same reserves over
the same seeded context: the median of warm calls, and the handler's first (cold) call.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from agentscope.message import Msg

from benchmarks.sessions import WINDOW, builtin_twin, copy_context
from copaw_context.agentscope2 import AsMsgHandler
from copaw_context.core.tokens.counters import EstimateTokenCounter

__all__ = ["HANDLER_RESERVES", "handler_split_ms", "handler_table", "handler_worst_ratio"]

HANDLER_RESERVES = (1_000, 13_107, 50_000)
"""Reserves (tokens) both splits are timed at (AgentScope's walk counts the tail once per
message it keeps, so a reserve of millions would time its counter, not its split)."""


def _median_ms(times: list[float]) -> float:
    return 1000 * statistics.median(times)


def handler_split_ms(context: list[Msg], repeat: int) -> dict[str, Any]:
    """Per reserve: ``AsMsgHandler``'s warm and AgentScope's split (median ms of ``repeat``
    calls each), and the handler's cold first call."""

    async def run() -> dict[str, Any]:
        messages = copy_context(context)
        agent = builtin_twin(messages, WINDOW)
        tools = await agent.toolkit.get_tool_schemas()
        handler = AsMsgHandler(EstimateTokenCounter(4))
        options: dict[str, Any] = {"threshold_tokens": 0, "force": True}
        started = time.perf_counter()
        handler.context_check(messages, reserve_tokens=HANDLER_RESERVES[0], **options)
        cold = time.perf_counter() - started
        rows: dict[int, dict[str, float]] = {}
        for reserve in HANDLER_RESERVES:
            ours, theirs = [], []
            for _ in range(repeat):
                started = time.perf_counter()
                handler.context_check(messages, reserve_tokens=reserve, **options)
                ours.append(time.perf_counter() - started)
                started = time.perf_counter()
                await agent._split_context_for_compression(reserve, tools)
                theirs.append(time.perf_counter() - started)
            rows[reserve] = {"handler_ms": _median_ms(ours), "agentscope_ms": _median_ms(theirs)}
        return {"n": len(messages), "cold_ms": 1000 * cold, "rows": rows}

    return asyncio.run(run())


def handler_table(split: dict[str, Any]) -> list[str]:
    """The section of the report: both splits per reserve, and the handler's first call."""
    lines = [
        f"## AsMsgHandler split against AgentScope's at N={split['n']} (same messages, bytes/4)",
        "",
        "| reserve (tokens) | AsMsgHandler warm ms | AgentScope's "
        "`_split_context_for_compression` ms |",
        "|---:|---:|---:|",
    ]
    for reserve, row in split["rows"].items():
        lines.append(f"| {reserve:,} | {row['handler_ms']:.2f} | {row['agentscope_ms']:.2f} |")
    lines += ["", f"The handler's first call (it counts every message): {split['cold_ms']:.0f} ms."]
    return lines


def handler_worst_ratio(split: dict[str, Any]) -> float:
    """The handler's time over AgentScope's at the reserve where it does worst."""
    return max(float(r["handler_ms"] / r["agentscope_ms"]) for r in split["rows"].values())
