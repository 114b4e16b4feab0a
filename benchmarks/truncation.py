"""Truncation figures: one output cut to 50 KB, the offload write, and stage 1.

The cut is :func:`truncate_text_output` on a text already in memory (1 MB, 10 MB, 100 MB of
log lines, 30% of them Chinese, and one 10 MB line of minified JSON). The offload write is
:meth:`OffloadStore.save` (temp file, rename) and the barrier after which its background file
and directory fsyncs are done (``durable()``): the whole durable write. Stage 1 is
:meth:`ToolResultPruning.bound_fresh` on one fresh tool result of 200 B to 200 KB with the
default limits (50 KB recent): the results over the limit are saved and cut.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from benchmarks.corpus import one_line_json, tool_output
from benchmarks.measure import Figure, median_ms, median_ms_async, peak_bytes, peak_bytes_async
from copaw_context.core.config.running import ToolResultPruningConfig
from copaw_context.core.toolresults.offload import OffloadStore
from copaw_context.core.toolresults.policy import ToolResultPruning
from copaw_context.core.toolresults.truncation import truncate_text_output
from copaw_context.core.workspace import durable

__all__ = ["CUT_CASES", "STAGE1_SIZES", "bench_cut", "bench_save", "bench_stage1"]

MB = 1_000_000
MAX_BYTES = 51_200
_NOTICE_PATH = "/ws/tool_result/0123456789abcdef0123456789abcdef.txt"

CUT_CASES: list[tuple[str, int, bool]] = [
    ("1 MB log", MB, False),
    ("10 MB log", 10 * MB, False),
    ("100 MB log", 100 * MB, False),
    ("10 MB one line", 10 * MB, True),
]
STAGE1_SIZES = [200, 2_000, 20_000, 60_000, 100_000, 200_000]


def _text(size: int, one_line: bool) -> str:
    return one_line_json(size) if one_line else tool_output(size)


def _naive(text: str) -> str:
    """The simplest cut (encode everything, slice, decode): a reference point, no notice."""
    return text.encode("utf-8")[:MAX_BYTES].decode("utf-8", errors="ignore")


def bench_cut(quick: bool) -> list[Figure]:
    """Median time and peak extra memory of cutting each case to 50 KB."""
    figures: list[Figure] = []
    for label, size, one_line in CUT_CASES:
        if quick and size > 10 * MB:
            continue
        text = _text(size, one_line)
        repeat = 3 if quick else (5 if size > 10 * MB else 15)

        def cut(text: str = text) -> str:
            return truncate_text_output(text, max_bytes=MAX_BYTES, file_path=_NOTICE_PATH)

        def naive(text: str = text) -> str:
            return _naive(text)

        naive_figures = {"naive_ms": median_ms(naive, repeat), "naive_peak": peak_bytes(naive)}
        figures.append(Figure(label, median_ms(cut, repeat), peak_bytes(cut), naive_figures))
        del text
    return figures


def bench_save(quick: bool) -> list[Figure]:
    """Median time and peak memory of the offload write until it is on disk: the save (write,
    rename) and the barrier its background file and directory fsyncs complete at."""
    figures: list[Figure] = []
    sizes = [MB, 10 * MB] if quick else [MB, 10 * MB, 100 * MB]
    with tempfile.TemporaryDirectory(prefix="copaw-bench-") as tmp:
        store = OffloadStore(Path(tmp) / "tool_result", 1)
        for size in sizes:
            text = tool_output(size)
            repeat = 3 if quick or size > 10 * MB else 7

            async def save(text: str = text) -> Path:
                path = await store.save(text)
                await durable.durable()
                return path

            time_ms = asyncio.run(median_ms_async(save, repeat))
            peak = asyncio.run(peak_bytes_async(save))
            figures.append(Figure(f"save {size // MB} MB", time_ms, peak))
            for path in store.directory.iterdir():
                path.unlink()
            del text
    return figures


def bench_stage1(quick: bool) -> list[Figure]:
    """Stage 1 (``bound_fresh``) on one fresh result of each size: time and peak memory."""
    figures: list[Figure] = []
    repeat = 7 if quick else 31
    with tempfile.TemporaryDirectory(prefix="copaw-bench-") as tmp:
        store = OffloadStore(Path(tmp) / "tool_result", 1)
        pruning = ToolResultPruning(ToolResultPruningConfig(), store, Path(tmp))
        for size in STAGE1_SIZES:
            output = tool_output(size, seed=size)

            async def step(output: str = output) -> object:
                return await pruning.bound_fresh("shell", '{"cmd": "make"}', [output], {})

            time_ms = asyncio.run(median_ms_async(step, repeat))
            peak = asyncio.run(peak_bytes_async(step))
            saved = sum(1 for _ in store.directory.iterdir()) if store.directory.exists() else 0
            figures.append(Figure(f"{size:,} B", time_ms, peak, {"files": saved}))
    return figures
