"""Where a step's time goes: cProfile of the pre-reasoning work over a few steps."""

from __future__ import annotations

import asyncio
import cProfile
import io
import pstats
from pathlib import Path
from typing import Any

from benchmarks.sessions import WINDOW, copy_context, make_agent, make_steps, run_stage1
from copaw_context.core.context.report import Limits

__all__ = ["profile_steps"]


def profile_steps(root: Path, context: list[Any], counter: str, steps: int, top: int = 30) -> str:
    """cProfile text (cumulative, then own time) of ``steps`` pre-reasoning steps."""

    async def run() -> cProfile.Profile:
        work = copy_context(context)
        agent, hook, session = await make_agent(root / f"profile-{counter}", counter, work)
        engine = hook.engine
        limits = Limits(10**12, WINDOW // 10)
        await engine.before_reasoning(session, limits=limits)
        await engine.input_meter.measure(session)
        profiler = cProfile.Profile()
        for step in make_steps(steps, seed=11):
            work.append(await run_stage1(hook, session, step))
            await asyncio.sleep(0)  # the saves stage 1 started ahead (see steps.py)
            profiler.enable()
            await engine.before_reasoning(session, limits=limits)
            profiler.disable()
            # The call's own input is AgentScope's work; on_model_call hands it over.
            session.model_input = await agent._prepare_model_input()
            profiler.enable()
            await engine.input_meter.measure(session)
            profiler.disable()
            session.model_input = None
        return profiler

    profiler = asyncio.run(run())
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()
