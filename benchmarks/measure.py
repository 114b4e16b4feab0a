"""Timing and memory helpers shared by the benchmarks."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Figure", "median_ms", "median_ms_async", "peak_bytes", "peak_bytes_async"]


@dataclass(frozen=True)
class Figure:
    """One measured row: a label, a median time in milliseconds and a peak in bytes."""

    label: str
    median_ms: float
    peak_bytes: int | None = None
    extra: dict[str, Any] | None = None


def median_ms(run: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``run``, in milliseconds (GC paused)."""
    times: list[float] = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        finally:
            gc.enable()
    return 1000 * statistics.median(times)


async def median_ms_async(run: Callable[[], Awaitable[object]], repeat: int) -> float:
    """Median wall time of ``repeat`` awaited calls of ``run``, in milliseconds."""
    times: list[float] = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        await run()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def peak_bytes(run: Callable[[], object]) -> int:
    """Peak memory allocated by one call of ``run`` beyond what was live before it.

    The result of ``run`` is kept until the peak is read, so it counts (an excerpt is small).
    """
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = run()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return max(0, peak - before)


async def peak_bytes_async(run: Callable[[], Awaitable[object]]) -> int:
    """:func:`peak_bytes` for a coroutine (threads it starts are traced too)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = await run()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return max(0, peak - before)
