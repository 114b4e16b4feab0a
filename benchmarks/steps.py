"""The engine's per-step cost on seeded sessions, against the floor and AgentScope's built-in.

One step appends an assistant message with one tool call (or 2-4 in parallel) and its
results, after our stage 1, then runs the engine's pre-reasoning work as the middleware
does before a model call: ``before_reasoning`` (flush, TTL cleanup, stage 2, count, the
compaction check) and ``model_call`` (results marked seen, the input measured). The window
is 128K tokens; the sessions are larger, so the compaction threshold is lifted for the
steps (a step never compacts; a compaction is measured on its own). The floor is counting
only the new message with the same counter. AgentScope's built-in per step is
``Agent.compress_context()`` below its threshold (a bytes/4 count of the whole context).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.sessions import (
    WINDOW,
    builtin_twin,
    copy_context,
    make_agent,
    make_steps,
    run_stage1,
)
from benchmarks.sessions import seed_session as _seed
from copaw_context.agentscope2.messages import message_view
from copaw_context.core.context.report import Limits
from copaw_context.core.planning.split import plan_split

__all__ = ["COUNTERS", "StepRow", "bench_steps", "growth_exponent", "split_ms"]

COUNTERS = ("estimate", "o200k_base")
_NO_COMPACTION = Limits(threshold=10**12, reserve=WINDOW // 10)


@dataclass
class StepRow:
    """Medians over the measured steps of one session size and counter, in milliseconds."""

    n: int
    counter: str
    pre_ms: float
    io_ms: float
    """Mean time of the offload writes a step started and waited for (write and rename; their
    fsyncs are group-committed in the background); the saves started ahead at stage 1 are
    counted with stage 1."""
    cpu_ms: float
    """Median of the step's time minus its offload writes."""
    stage1_ms: float
    floor_ms: float
    cold_ms: float
    tokens: int
    builtin_ms: float | None = None
    samples: dict[str, list[float]] = field(default_factory=dict)


def _timed_saves(store: Any) -> list[tuple[float, float]]:
    """Make ``store.save_parts`` record (start, wall time) of each save. A step's offload
    writes are the saves it started; saves started ahead at stage 1 run in the background."""
    spent: list[tuple[float, float]] = []
    original = store.save_parts

    async def save_parts(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(*args, **kwargs)
        finally:
            spent.append((started, time.perf_counter() - started))

    store.save_parts = save_parts
    return spent


async def _clock(run: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await run()
    return 1000 * (time.perf_counter() - started)


async def _measure(
    workspace: Path, counter: str, context: list[Any], steps: int, warmup: int, builtin: bool
) -> StepRow:
    agent, hook, session = await make_agent(workspace, counter, context)
    engine = hook.engine
    twin = builtin_twin(context, context_size=10**9) if builtin else None
    saves = _timed_saves(engine.context.store)

    async def pre() -> float:
        """The middleware's work before one model call, in ms. The model call's own input
        (system prompt, tool schemas) is AgentScope's work, made for the call whatever the
        middleware does: prepared untimed and handed over as ``on_model_call`` does."""
        spent = await _clock(lambda: engine.before_reasoning(session, limits=_NO_COMPACTION))
        session.model_input = await agent._prepare_model_input()
        try:
            return spent + await _clock(lambda: engine.input_meter.measure(session))
        finally:
            session.model_input = None

    cold = await pre()
    meter = await engine.context.meter(session)
    keys = ("pre", "io", "cpu", "stage1", "floor", "builtin")
    samples: dict[str, list[float]] = {k: [] for k in keys}
    for index, step in enumerate(make_steps(warmup + steps)):
        gc.collect()  # a collection of the previous step's garbage is not this step's cost
        started = time.perf_counter()
        message = await run_stage1(hook, session, step)
        # The saves stage 1 started ahead run once the loop is free (in an agent: while the
        # tool's next model call is prepared); counted with stage 1, which started them.
        await asyncio.sleep(0)
        stage1 = 1000 * (time.perf_counter() - started)
        context.append(message)
        saves.clear()
        step_started = time.perf_counter()
        pre_ms = await pre()
        io_ms = 1000 * sum(spent for started, spent in saves if started >= step_started)
        started = time.perf_counter()
        for part in message_view(message, True).parts:
            meter.counter.count(part.text)
        floor = 1000 * (time.perf_counter() - started)
        built = await _clock(twin.compress_context) if twin is not None else 0.0
        if index >= warmup:
            values = (pre_ms, io_ms, pre_ms - io_ms, stage1, floor, built)
            for key, value in zip(keys, values, strict=True):
                samples[key].append(value)
    report = await engine.report(session)
    median = {k: statistics.median(v) for k, v in samples.items()}
    return StepRow(
        n=len(context) - warmup - steps,
        counter=counter,
        pre_ms=median["pre"],
        io_ms=statistics.fmean(samples["io"]),
        cpu_ms=median["cpu"],
        stage1_ms=median["stage1"],
        floor_ms=median["floor"],
        cold_ms=cold,
        tokens=report.total,
        builtin_ms=median["builtin"] if builtin else None,
        samples=samples,
    )


def split_ms(context: list[Any], reserves: list[int], repeat: int) -> dict[int, float]:
    """Median time of planning a split of the warm ledger at each reserve (tokens)."""

    async def run() -> dict[int, float]:
        with tempfile.TemporaryDirectory(prefix="copaw-bench-") as tmp:
            agent, hook, session = await make_agent(Path(tmp), "estimate", context)
            ledger, _ = await hook.engine.context.sync(session)  # counts warm from here on
            report = await hook.engine.report(session)
            out: dict[int, float] = {}
            for reserve in reserves:
                times = []
                for _ in range(repeat):
                    started = time.perf_counter()
                    items, _refs = ledger.split_items()
                    plan_split(
                        items,
                        threshold_tokens=report.threshold,
                        reserve_tokens=reserve,
                        fixed_tokens=report.fixed,
                        index=ledger.split_index(),
                    )
                    times.append(1000 * (time.perf_counter() - started))
                out[reserve] = statistics.median(times)
            return out

    return asyncio.run(run())


def growth_exponent(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(time) against log(N)."""
    import math

    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(t, 1e-9)) for _, t in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    num = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    den = sum((x - mean_x) ** 2 for x in xs)
    return num / den if den else 0.0


def bench_steps(
    root: Path, sizes: list[int], steps: int, warmup: int, log: Callable[[str], None]
) -> tuple[list[StepRow], dict[int, list[Any]]]:
    """Per-step rows for every size and counter; also the seeded contexts (by size), whose
    offloaded files stay under ``root``."""
    rows: list[StepRow] = []
    seeded: dict[int, list[Any]] = {}
    for n in sizes:
        started = time.perf_counter()
        seeded[n] = asyncio.run(_seed(root / f"seed-{n}", n))
        log(f"  seeded N={n} in {time.perf_counter() - started:.1f} s")
        for counter in COUNTERS:
            context = copy_context(seeded[n])
            workspace = root / f"steps-{n}-{counter}"
            row = asyncio.run(
                _measure(workspace, counter, context, steps, warmup, counter == "estimate")
            )
            rows.append(row)
            log(
                f"  N={n} {counter}: {row.pre_ms:.2f} ms/step ({row.cpu_ms:.2f} without writes), "
                f"floor {row.floor_ms:.3f} ms, built-in {row.builtin_ms or 0:.2f} ms"
            )
    return rows, seeded
