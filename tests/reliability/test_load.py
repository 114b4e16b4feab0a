"""Guarantee 5: eight agents sharing one workspace, run as threads, as tasks of one event loop
and as processes, with TTL cleanup of the offload folder running all the while: no torn or
interleaved archive line, every part archived at most once and kept in its agent's context
or the archive, no offload file clobbered (each holds one whole framed output), every file a
notice names exists, and the recall index refreshed all the while over the shared archive
holds the same lines as one built afresh afterwards.

The agents are tests/reliability/load_child.py's; normal mode runs a few turns each (three
model calls a turn), soak mode about 500 model calls each.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
import tempfile
import threading
from collections import Counter
from pathlib import Path

import pytest

from copaw_context.core.memory.search import MemoryIndex
from copaw_context.core.toolresults.offload import OffloadStore
from tests.reliability import load_child
from tests.reliability.budget import record, scaled
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import archived_keys
from tests.reliability.processes import fork_context
from tests.reliability.workspace_checks import dangling_notices, torn_lines

AGENTS = 8
_FRAME = re.compile(r"BEGIN (\w+) (\d+)\n")


def run_threads(driver: HostDriver, workspace: Path, turns: int) -> list[dict[str, list[str]]]:
    results: list[dict[str, list[str]]] = [{} for _ in range(AGENTS)]
    errors: list[BaseException] = []

    def one(number: int) -> None:
        try:
            results[number] = asyncio.run(load_child.agent_run(driver, workspace, number, turns))
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(AGENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(t.is_alive() for t in threads), "an agent thread hung"
    assert not errors, errors[:2]
    return results


def run_tasks(driver: HostDriver, workspace: Path, turns: int) -> list[dict[str, list[str]]]:
    async def all_agents() -> list[dict[str, list[str]]]:
        return list(
            await asyncio.gather(
                *(load_child.agent_run(driver, workspace, n, turns) for n in range(AGENTS))
            )
        )

    return asyncio.run(all_agents())


def run_processes(driver: HostDriver, workspace: Path, turns: int) -> list[dict[str, list[str]]]:
    outs = [workspace.parent / f"agent{n}.json" for n in range(AGENTS)]
    processes = [
        fork_context().Process(
            target=load_child.run, args=(driver.name, str(workspace), n, turns, str(outs[n]))
        )
        for n in range(AGENTS)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(300)
    hung = [p for p in processes if p.is_alive()]
    for process in hung:
        process.kill()
    assert not hung, "an agent process hung"
    assert all(p.exitcode == 0 for p in processes), [p.exitcode for p in processes]
    return [json.loads(out.read_text()) for out in outs]


def clobbered_offloads(workspace: Path) -> tuple[int, list[str]]:
    """Offload files, and those not holding one whole framed output."""
    files = sorted((workspace / "tool_result").glob("*.txt"))
    clobbered = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        found = _FRAME.match(text)
        kind, seed = found.groups() if found else ("", "")
        if not found or not text.endswith(f"END {kind} {seed}\n") or text.count("BEGIN ") != 1:
            clobbered.append(f"{path.name}: {text[:40]!r}...{text[-40:]!r}")
    return len(files), clobbered


def cleaner(workspace: Path, stop: threading.Event, runs: list[int]) -> None:
    """TTL cleanup of the shared offload folder (the default retention) and a refresh of the
    recall index over the shared archive, over and over."""
    store = OffloadStore(workspace / "tool_result", retention_days=3)
    index = MemoryIndex(workspace)
    while not stop.is_set():
        asyncio.run(store.cleanup())
        index.refresh_sync()
        runs.append(1)
        stop.wait(0.01)  # leave the agents the cores


def indexed_lines(workspace: Path) -> list[tuple[str, int]]:
    """The archive lines the recall index of ``workspace`` holds (brought up to date)."""
    index = MemoryIndex(workspace)
    index.refresh_sync()
    with sqlite3.connect(index.path) as conn:
        rows = conn.execute(
            "SELECT path, line FROM chunks WHERE kind = 'dialog' ORDER BY path, line"
        ).fetchall()
    return [(str(path), int(line)) for path, line in rows]


def check_index(workspace: Path) -> int:
    """The index built while the agents appended equals one built afresh afterwards."""
    during = indexed_lines(workspace)
    with tempfile.TemporaryDirectory() as name:
        shutil.copytree(workspace / "dialog", Path(name) / "dialog")
        fresh = indexed_lines(Path(name))
    assert during == fresh, f"recall index: {len(during)} lines indexed, {len(fresh)} afresh"
    return len(during)


MODES = {"threads": run_threads, "tasks": run_tasks, "processes": run_processes}


@pytest.mark.parametrize("mode", list(MODES))
def test_eight_agents_share_one_workspace(driver: HostDriver, mode: str) -> None:
    turns = scaled(5, 170)
    with tempfile.TemporaryDirectory() as name:
        workspace = Path(name) / "workspace"
        workspace.mkdir()
        stop, runs = threading.Event(), []  # type: ignore[var-annotated]
        sweeper = threading.Thread(target=cleaner, args=(workspace, stop, runs))
        sweeper.start()
        try:
            results = MODES[mode](driver, workspace, turns)
        finally:
            stop.set()
            sweeper.join(60)
        lines, torn = torn_lines(workspace)
        keys = archived_keys(workspace / "dialog", ())
        twice = [k for k, n in keys.items() if n > 1]
        in_context = Counter(k for r in results for k in r["context"])
        lost = {
            key
            for result in results
            for key in set(result["created"]) - set(result["context"]) - set(keys)
        }
        both = [k for k in in_context if k in keys]
        offloads, clobbered = clobbered_offloads(workspace)
        indexed = check_index(workspace)
        dangling = dangling_notices(workspace)
    assert not torn, torn[:5]
    assert not twice, f"archived twice: {twice[:5]}"
    assert not lost, f"lost: {sorted(lost)[:5]}"
    assert not both, f"in a context and the archive: {both[:5]}"
    assert not clobbered, clobbered[:5]
    assert not dangling, f"notices name files that do not exist: {dangling[:5]}"
    assert lines > 0, "no agent archived anything"
    assert offloads > 0, "no agent offloaded anything"
    record(
        f"load[{mode}]",
        agents=AGENTS,
        turns_each=turns,
        archive_lines=lines,
        offload_files=offloads,
        cleanup_runs=len(runs),
        index_lines=indexed,
        lost=len(lost),
        duplicated=len(twice) + len(both),
        torn_lines=len(torn),
        clobbered=len(clobbered),
        dangling_notices=len(dangling),
    )
