"""Recall of ``memory_search``: a seeded archive of 100,000 messages written through the
package's own archive code into a real workspace, one question per planted fact, and how often
the tool's answer holds the one message that answers it (recall@1, recall@5), how fast it
answers (p50, p95, each call as the agent makes it: refresh, search, the text it reads), and
what the index costs (build time, size). Two seeds: the first is the one the search was tuned
on, the second was generated afterwards.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import time
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.recall_corpus import Session, copied_run, make_corpus
from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.memory.service import MemoryService
from copaw_context.core.memory.tools import MemoryTools

__all__ = [
    "SEEDS",
    "Answer",
    "RecallRun",
    "bench_recall",
    "parse_hits",
    "recall_table",
    "run_recall",
    "write_archive",
]

SEEDS = (7, 20261207)
"""The tuning seed, then the held-out one (generated after the tuning was done)."""
_BATCH = 40  # messages per archive write (a compaction's worth)
_BASE = datetime(2024, 3, 1, 9, 0, tzinfo=timezone(timedelta(hours=8)))
_HIT = re.compile(r"^(\d+)\. (.+?) line (\d+)")
_READ = re.compile(r'read_file\(file_path=("(?:[^"\\]|\\.)*"), start_line=(\d+)\)')


@dataclass(frozen=True)
class Answer:
    """Where a fact's message was archived: its session, file (relative) and line."""

    session_id: str
    path: str
    line: int


async def write_archive(workspace: Path, sessions: list[Session]) -> dict[int, Answer]:
    """Every session's messages appended through :class:`DialogArchive` (a batch per
    compaction), then where each fact's message landed."""
    dialog = workspace / "dialog"
    facts: dict[str, int] = {}
    for session in sessions:
        archive = DialogArchive(
            dialog, session_id=session.session_id, agent_name="friday", workspace=workspace
        )
        start = _BASE + timedelta(
            days=session.day, minutes=zlib.crc32(session.session_id.encode()) % 600
        )
        records, stamps, ids = [], [], []
        for n, message in enumerate(session.messages):
            stamp = (start + timedelta(seconds=20 * n)).isoformat()
            archive_id = f"{session.session_id}:{n}"
            if message.fact is not None:
                facts[archive_id] = message.fact
            records.append(
                {
                    "id": archive_id,
                    "name": message.role,
                    "role": message.role,
                    "content": message.blocks,
                    "metadata": {},
                    "created_at": stamp,
                }
            )
            stamps.append(stamp)
            ids.append(archive_id)
        for at in range(0, len(records), _BATCH):
            part = slice(at, at + _BATCH)
            await archive.append(
                records[part], stamps[part], ids[part], forms=["agentscope2.Msg"] * len(ids[part])
            )
    found: dict[int, Answer] = {}
    for path in sorted(dialog.glob("*.jsonl")):
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                head = raw[:400].decode("utf-8", "replace")
                match = re.search(r'"archive_id": ?"([^"]+)"', head)
                if match and match.group(1) in facts:
                    session_id = match.group(1).rsplit(":", 1)[0]
                    rel = path.relative_to(workspace).as_posix()
                    found[facts[match.group(1)]] = Answer(session_id, rel, number)
    return found


def parse_hits(text: str) -> list[dict[str, Any]]:
    """The hits of a ``memory_search`` answer: rank, path, line, the session it names and the
    ``read_file`` call under it (its path and line)."""
    hits: list[dict[str, Any]] = []
    for row in text.splitlines():
        match = _HIT.match(row)
        if match:
            hit = {"rank": int(match.group(1)), "path": match.group(2), "line": int(match.group(3))}
            hits.append({**hit, "session": None, "read": None})
            continue
        read = _READ.search(row)
        if read and hits:
            hits[-1]["read"] = (json.loads(read.group(1)), int(read.group(2)))
            session = re.search(r"; session (\S+)$", row)
            hits[-1]["session"] = session.group(1) if session else None
    return hits


@dataclass
class RecallRun:
    """The figures of one seed."""

    seed: int
    messages: int
    sessions: int
    questions: int
    archive_files: int
    archive_mb: float
    build_s: float
    index_mb: float
    recall_at_1: float
    recall_at_5: float
    p50_ms: float
    p95_ms: float
    cpu_p50_ms: float
    cpu_p95_ms: float
    """The process's CPU time per call (all threads): what the machine's other load adds not."""
    by_kind: dict[str, tuple[int, int, int]]
    """kind and language ("config en") -> (questions, found first, found in the top 5)."""
    sourced: float
    """Share of top-5 answer hits that name their session and a read_file call of that line."""
    copied: int
    """Questions that copy a run of words from their answer (0 is the point)."""
    misses: list[tuple[str, str]]


async def run_recall(
    workspace: Path,
    seed: int,
    messages: int = 100_000,
    questions: int = 300,
    sessions: int = 400,
    tools: MemoryTools | None = None,
) -> RecallRun:
    """Generate, archive, index and ask; the figures of one seed."""
    corpus, facts = make_corpus(seed, messages, questions, sessions)
    answers = await write_archive(workspace, corpus)
    tools = tools or MemoryService(parse_running_config({"running": {}}), workspace).tools
    started = time.perf_counter()
    await tools.index.refresh()
    build = time.perf_counter() - started
    index_bytes = sum(
        p.stat().st_size for p in tools.index.path.parent.glob(tools.index.path.name + "*")
    )
    dialog = sorted((workspace / "dialog").glob("*.jsonl"))
    times: list[float] = []
    cpu: list[float] = []
    first = top5 = sourced = 0
    by_kind: dict[str, list[int]] = {}
    misses: list[tuple[str, str]] = []
    for fact in facts:
        answer = answers[fact.number]
        begun, used = time.perf_counter(), time.process_time()
        text = await tools.memory_search(fact.question, limit=5)
        times.append((time.perf_counter() - begun) * 1000)
        cpu.append((time.process_time() - used) * 1000)
        rank = _rank(parse_hits(text), answer)
        counts = by_kind.setdefault(f"{fact.kind} {fact.lang}", [0, 0, 0])
        counts[0] += 1
        if rank is not None:
            top5 += 1
            counts[2] += 1
            sourced += _names_source(parse_hits(text)[rank - 1], answer)
            if rank == 1:
                first += 1
                counts[1] += 1
        if rank != 1 and len(misses) < 12:
            misses.append((fact.question, text.splitlines()[1] if "\n" in text else text))
    times.sort()
    cpu.sort()
    return RecallRun(
        seed=seed,
        messages=sum(len(s.messages) for s in corpus),
        sessions=len(corpus),
        questions=len(facts),
        archive_files=len(dialog),
        archive_mb=sum(p.stat().st_size for p in dialog) / 1e6,
        build_s=build,
        index_mb=index_bytes / 1e6,
        recall_at_1=first / len(facts),
        recall_at_5=top5 / len(facts),
        p50_ms=statistics.median(times),
        p95_ms=_p95(times),
        cpu_p50_ms=statistics.median(cpu),
        cpu_p95_ms=_p95(cpu),
        by_kind={k: (v[0], v[1], v[2]) for k, v in sorted(by_kind.items())},
        sourced=sourced / top5 if top5 else 0.0,
        copied=sum(copied_run(f.question, f.answer_text) is not None for f in facts),
        misses=misses,
    )


def _p95(values: list[float]) -> float:
    return values[max(0, round(0.95 * len(values)) - 1)]


def _rank(hits: list[dict[str, Any]], answer: Answer) -> int | None:
    for hit in hits:
        if (hit["path"], hit["line"]) == (answer.path, answer.line):
            return int(hit["rank"])
    return None


def _names_source(hit: dict[str, Any], answer: Answer) -> bool:
    return bool(hit["session"] == answer.session_id and hit["read"] == (answer.path, answer.line))


def bench_recall(root: Path, quick: bool, log: Any = print) -> list[RecallRun]:
    """Both seeds (a tenth of the size with ``quick``)."""
    runs: list[RecallRun] = []
    for seed in SEEDS:
        log(f"recall: seed {seed} ...")
        size = (10_000, 60, 40) if quick else (100_000, 300, 400)
        run = asyncio.run(run_recall(root / f"recall-{seed}", seed, *size))
        runs.append(run)
    return runs


def recall_table(runs: list[RecallRun]) -> list[str]:
    """The Markdown of both seeds: the figures, then per kind and language."""
    lines = [
        "## Recall of memory_search (seeded archive, one answer message per question)",
        "",
        "| seed | messages | sessions | archive files (MB) | questions | recall@1 | recall@5 | "
        "p50 ms | p95 ms | CPU p50 / p95 ms | index build s | index MB | "
        "hits naming session + read_file |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        lines.append(
            f"| {r.seed} | {r.messages:,} | {r.sessions} | {r.archive_files} ({r.archive_mb:.1f}) "
            f"| {r.questions} | {r.recall_at_1:.3f} | {r.recall_at_5:.3f} | {r.p50_ms:.1f} | "
            f"{r.p95_ms:.1f} | {r.cpu_p50_ms:.1f} / {r.cpu_p95_ms:.1f} | {r.build_s:.1f} | "
            f"{r.index_mb:.1f} | {r.sourced:.0%} |"
        )
    kinds = sorted({k for r in runs for k in r.by_kind})
    lines += ["", "| kind | " + " | ".join(f"seed {r.seed}: @1 / @5" for r in runs) + " |"]
    lines.append("|---|" + "---:|" * len(runs))
    for kind in kinds:
        cells = []
        for r in runs:
            n, one, five = r.by_kind.get(kind, (0, 0, 0))
            cells.append(f"{one}/{n} / {five}/{n}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    copied = sum(r.copied for r in runs)
    lines += ["", f"Questions copying 5 words (6 Chinese characters) of their answer: {copied}."]
    return lines


def main() -> None:  # pragma: no cover - a manual run
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        runs = bench_recall(Path(tmp), "--quick" in sys.argv)
    print("\n".join(recall_table(runs)))
    for r in runs:
        for question, first in r.misses:
            print(f"miss (seed {r.seed}): {question} -> {first}")


if __name__ == "__main__":
    main()
