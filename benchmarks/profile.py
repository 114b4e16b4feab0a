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

__all__ = ["profile_compaction", "profile_steps"]


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


_STDLIB = "stdlib and builtins"


def _where(path: str) -> str:
    """The part of the code a profiled function belongs to: a copaw-context module
    (``core/summary/rules``), a library, or the standard library and builtins."""
    parts = Path(path).parts
    if "copaw_context" in parts:
        inside = parts[parts.index("copaw_context") + 1 :]
        return "/".join(inside).removesuffix(".py")
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1]
    return _STDLIB


def profile_compaction(
    root: Path, n: int, context: list[Any], counter: str, top: int = 40
) -> tuple[str, list[tuple[str, float]]]:
    """cProfile text of one compaction of ``context`` (seeded in ``root / f"seed-{n}"``) with
    its worker-thread work run inline (``asyncio.to_thread`` as a plain call, so the profile
    sees it), and the own CPU seconds per part of the code, largest first."""
    from benchmarks.compaction import our_compaction
    from benchmarks.sessions import copy_context

    async def inline(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    profiler = cProfile.Profile()
    threaded = asyncio.to_thread
    asyncio.to_thread = inline
    try:
        work = copy_context(context)
        asyncio.run(our_compaction(root / f"seed-{n}", work, counter, "profile", profiler))
    finally:
        asyncio.to_thread = threaded
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    entries: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    shares: dict[str, float] = {}
    memo: dict[Any, dict[str, float]] = {}
    for key, (_calls, _total, own, _cumulative, _callers) in entries.items():
        for where, fraction in _owners(entries, key, memo, set()).items():
            shares[where] = shares.get(where, 0.0) + own * fraction
    return out.getvalue(), sorted(shares.items(), key=lambda item: -item[1])


def _owners(
    entries: dict[Any, Any], key: Any, memo: dict[Any, dict[str, float]], path: set[Any]
) -> dict[str, float]:
    """The parts of the code ``key``'s time belongs to, as fractions: its own part, except
    for the standard library's and builtins' functions, whose time goes to the callers that
    spent it (by cProfile's per-caller split), so ``json.dumps`` under the archive counts as
    the archive's."""
    if key in memo:
        return memo[key]
    where = _where(key[0])
    callers = entries[key][4] if key in entries else {}
    callers = {c: split for c, split in callers.items() if c not in path}
    if where != _STDLIB or not callers:
        memo[key] = {where: 1.0}
        return memo[key]
    total = sum(split[2] for split in callers.values()) or float(len(callers))
    owners: dict[str, float] = {}
    for caller, split in callers.items():
        weight = (split[2] or (0.0 if total != len(callers) else 1.0)) / total
        for part, fraction in _owners(entries, caller, memo, path | {key}).items():
            owners[part] = owners.get(part, 0.0) + weight * fraction
    memo[key] = owners or {where: 1.0}
    return memo[key]
