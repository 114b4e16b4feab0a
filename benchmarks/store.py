"""The workspace store's costs on this machine: the files against PostgreSQL (issue 20).

``python -m benchmarks --only store`` starts a PostgreSQL 16 (pgserver) in a temporary
folder and measures each operation on both stores:

- archive append: one compaction's batch (20 messages of about 1 KB) through the archive
  step's writer, durable when it returns (``DialogArchive``; ``SharedArchive`` with its local
  copy brought up to date);
- blob put: a 100 KB tool result saved and made durable (``put_blob`` then ``sync``), and a
  line-range read: lines 5,001-5,100 of a 10,000-line blob (``read_lines``);
- recall: ``memory_search`` on a 100K-message archive (the recall benchmark's corpus, seed 7):
  over the files, and on a replica whose folder started empty (its copies and index derived
  from the database: the first search copies and indexes all of it; every search copies
  what is new first);
- per step at N = 1,000 on a real AgentScope 2.x agent: stage 1, the pre-reasoning pipeline,
  the model input measured and MEMORY.md for the system prompt, without and with the store;
- sizing: the rows and bytes the database holds per 1,000 of those steps once every message
  is archived.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.recall import run_recall
from benchmarks.recall_corpus import make_corpus
from benchmarks.sessions import WINDOW, copy_context, make_agent, make_steps, run_stage1
from benchmarks.sessions import seed_session as _seed
from copaw_context.core.archive.mirror import ArchiveMirror
from copaw_context.core.archive.shared import SharedArchive
from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.context.report import Limits
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import WorkspaceStore
from copaw_context.core.store.select import STORE_ENV
from copaw_context.core.store.transfer import Layout, import_workspace
from copaw_context.core.toolresults.store_blobs import StoreBlobs
from copaw_context.testing.postgres import postgres_server

__all__ = ["StoreRow", "bench_store", "store_table"]

_NO_COMPACTION = Limits(threshold=10**12, reserve=WINDOW // 10)
_BATCH = 20


@dataclass
class StoreRow:
    """One operation's median (and p95) on each store, in ms."""

    operation: str
    files_ms: float
    postgres_ms: float
    files_p95_ms: float | None = None
    postgres_p95_ms: float | None = None


def _config(dsn: str | None) -> RunningConfig:
    light: dict[str, Any] = {"store": {"dsn": dsn}} if dsn else {}
    return parse_running_config({"running": {"light_context_config": light}})


def _folder(folder: Path, agent_id: str) -> Path:
    """A new workspace folder whose agent.json names ``agent_id``."""
    folder.mkdir(parents=True)
    (folder / "agent.json").write_text(f'{{"id": "{agent_id}", "running": {{}}}}', "utf-8")
    return folder


async def _times(run: Callable[[int], Awaitable[object]], repeat: int) -> list[float]:
    spent = []
    for i in range(repeat):
        started = time.perf_counter()
        await run(i)
        spent.append(1000 * (time.perf_counter() - started))
    return sorted(spent)


def _p95(values: list[float]) -> float:
    return values[max(0, round(0.95 * len(values)) - 1)]


def _row(name: str, files: list[float], pg: list[float]) -> StoreRow:
    return StoreRow(name, statistics.median(files), statistics.median(pg), _p95(files), _p95(pg))


async def _archive_rows(root: Path, dsn: str, repeat: int) -> StoreRow:
    messages = [{"role": "user", "content": "数据 and words " * 60} for _ in range(_BATCH)]
    stamps = ["2026-05-01T10:00:00+00:00"] * _BATCH
    files_ws = _folder(root / "archive-files", "archive-files")
    pg_ws = _folder(root / "archive-pg", "archive-pg")
    local = DialogArchive(files_ws / "dialog", session_id="s", agent_name="a", workspace=files_ws)
    blobs = StoreBlobs(_config(dsn), pg_ws)
    mirror = ArchiveMirror(blobs, pg_ws / "dialog", pg_ws)
    shared = SharedArchive(
        DialogArchive(pg_ws / "dialog", session_id="s", agent_name="a", workspace=pg_ws), mirror
    )

    def ids(i: int) -> list[str]:
        return [f"m{i}-{n}" for n in range(_BATCH)]

    files = await _times(lambda i: local.append(messages, stamps, ids(i)), repeat)
    pg = await _times(lambda i: shared.append(messages, stamps, ids(i)), repeat)
    await blobs.close()
    return _row(f"archive append ({_BATCH} messages, 1 KB each)", files, pg)


async def _blob_rows(root: Path, dsn: str, repeat: int) -> list[StoreRow]:
    text = "".join(f"line {i}: " + "x" * 90 + "\n" for i in range(10_000))
    hundred_kb = [text[:100_000]]
    stores: list[WorkspaceStore] = [FileStore(_folder(root / "blobs-files", "blobs-files"))]
    pg = PostgresStore(dsn, "blobs-pg")
    await pg.open()
    stores.append(pg)
    rows: dict[str, list[list[float]]] = {"put": [], "read": []}
    for store in stores:

        async def put(_: int, store: WorkspaceStore = store) -> None:
            await store.put_blob("tool_result", hundred_kb)
            await store.sync()

        rows["put"].append(await _times(put, repeat))
        key = (await store.put_blob("tool_result", [text])).key
        await store.sync()

        async def read(_: int, store: WorkspaceStore = store, key: str = key) -> None:
            await store.read_lines(key, 5001, 5100)

        rows["read"].append(await _times(read, repeat))
    await pg.close()
    return [
        _row("blob put (100 KB, durable)", *rows["put"]),
        _row("line-range read (100 of 10,000 lines)", *rows["read"]),
    ]


async def _recall_rows(root: Path, dsn: str, messages: int) -> tuple[list[StoreRow], float]:
    questions, sessions = (300, 400) if messages >= 100_000 else (60, 40)
    files_ws = _folder(root / "recall-files", "recall-files")
    files = await run_recall(files_ws, 7, messages, questions, sessions)
    store = PostgresStore(dsn, "recall-files")
    await store.open()
    started = time.perf_counter()
    await import_workspace(store, files_ws, Layout())
    imported = time.perf_counter() - started
    await store.close()
    replica = await asyncio.to_thread(_folder, root / "recall-replica", "recall-files")
    ctx = StepContext(_config(dsn), replica)
    started = time.perf_counter()
    await ctx.memory.tools.index.refresh()  # the copy of the archive, then its index
    first = 1000 * (time.perf_counter() - started)
    pg = await _ask(ctx, messages, questions, sessions)
    await ctx.close_store()
    for path in sorted(files_ws.glob("dialog/*.jsonl")):  # the copies are the files
        assert (replica / "dialog" / path.name).read_bytes() == path.read_bytes(), path.name
    label = f"memory_search on {files.messages:,} archived messages"
    return [
        StoreRow(label, files.p50_ms, statistics.median(pg), files.p95_ms, _p95(pg)),
        StoreRow("first search on a fresh replica (copy + index)", files.build_s * 1000, first),
    ], imported


async def _ask(ctx: StepContext, messages: int, questions: int, sessions: int) -> list[float]:
    """The replica's latencies for the files' run's questions (its copies hold the same
    bytes, so the same index and answers: only the time differs)."""
    _, facts = make_corpus(7, messages, questions, sessions)
    return await _times(
        lambda i: ctx.memory.tools.memory_search(facts[i].question, limit=5), len(facts)
    )


async def _step_rows(root: Path, dsn: str, steps: int) -> tuple[StoreRow, dict[str, float]]:
    context = await _seed(root / "seed-1000", 1000)
    spent: dict[str, list[float]] = {}
    sizing: dict[str, float] = {}
    for kind in ("files", "postgres"):
        if kind == "postgres":
            os.environ[STORE_ENV] = dsn
        try:
            folder = await asyncio.to_thread(_with_memory, root / f"steps-{kind}")
            spent[kind], held = await _steps(folder, copy_context(context), steps)
        finally:
            os.environ.pop(STORE_ENV, None)
        if kind == "postgres":
            sizing = await _sizing(dsn, root / f"steps-{kind}", held, steps)
    return _row("per step at N = 1,000 (stage 1 + pipeline + MEMORY.md)", *spent.values()), sizing


def _with_memory(workspace: Path) -> Path:
    workspace.mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("## Facts\n- the build uses make\n", encoding="utf-8")
    return workspace


async def _steps(workspace: Path, context: list[Any], steps: int) -> tuple[list[float], list[Any]]:
    agent, hook, session = await make_agent(workspace, "o200k_base", context)
    engine = hook.engine
    spent = []
    for index, step in enumerate(make_steps(steps + 3)):
        started = time.perf_counter()
        message = await run_stage1(hook, session, step)
        await asyncio.sleep(0)
        context.append(message)
        await engine.before_reasoning(session, limits=_NO_COMPACTION)
        prepare = time.perf_counter()
        session.model_input = await agent._prepare_model_input()  # AgentScope's, untimed
        prepared = time.perf_counter()
        await engine.input_meter.measure(session)
        session.model_input = None
        await engine.context.memory.prompt_block(WINDOW)
        if index >= 3:
            spent.append(1000 * (time.perf_counter() - started - (prepared - prepare)))
    await hook.close()
    return sorted(spent), context


async def _sizing(dsn: str, workspace: Path, context: list[Any], steps: int) -> dict[str, float]:
    """Rows and MB per 1,000 steps in the database once every message is archived."""
    blobs = StoreBlobs(_config(dsn), workspace)
    mirror = ArchiveMirror(blobs, workspace / "dialog", workspace)
    archive = SharedArchive(
        DialogArchive(workspace / "dialog", session_id="s", agent_name="a", workspace=workspace),
        mirror,
    )
    new = context[-steps - 3 :]
    await archive.append(
        [m.model_dump(mode="json") for m in new], [None] * len(new), [m.id for m in new]
    )
    await blobs.close()
    store = PostgresStore(dsn, workspace.name)
    await store.open()
    try:
        records = await store.read((await store.streams("dialog/"))[0])
        results = await store.list_blobs("tool_result")
    finally:
        await store.close()
    per = 1000 / (steps + 3)
    return {
        "archive_rows": len(records) * per,
        "archive_mb": sum(len(r.data) for r in records) * per / 1e6,
        "blobs": len(results) * per,
        "blob_mb": sum(b.nbytes for b in results) * per / 1e6,
    }


def bench_store(root: Path, quick: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """Every figure above (a tenth of the recall archive and fewer repeats with ``quick``)."""
    with postgres_server() as dsn:
        repeat = 10 if quick else 50
        log("  store: archive appends ...")
        rows = [asyncio.run(_archive_rows(root, dsn, repeat))]
        log("  store: blobs ...")
        rows += asyncio.run(_blob_rows(root, dsn, repeat))
        log("  store: recall ...")
        recall, imported = asyncio.run(_recall_rows(root, dsn, 10_000 if quick else 100_000))
        rows += recall
        log("  store: per step at N = 1,000 ...")
        step, sizing = asyncio.run(_step_rows(root, dsn, 10 if quick else 40))
        rows.append(step)
    return {"rows": rows, "import_s": imported, "sizing": sizing}


def store_table(results: dict[str, Any]) -> list[str]:
    """The store part's Markdown."""
    lines = [
        "## The workspace store: files against PostgreSQL",
        "",
        "| operation | files: median (p95) ms | PostgreSQL: median (p95) ms |",
        "|---|---:|---:|",
    ]
    for row in results["rows"]:
        files = f"{row.files_ms:.2f}" + (f" ({row.files_p95_ms:.2f})" if row.files_p95_ms else "")
        pg = f"{row.postgres_ms:.2f}" + (
            f" ({row.postgres_p95_ms:.2f})" if row.postgres_p95_ms else ""
        )
        lines.append(f"| {row.operation} | {files} | {pg} |")
    sizing = results["sizing"]
    lines += [
        "",
        f"Importing the recall archive into the database (`store import`): "
        f"{results['import_s']:.1f} s.",
        f"Per 1,000 steps of the per-step session, once every message is archived: "
        f"{sizing['archive_rows']:,.0f} archive rows ({sizing['archive_mb']:.1f} MB) and "
        f"{sizing['blobs']:,.0f} saved results ({sizing['blob_mb']:.1f} MB).",
    ]
    return lines
