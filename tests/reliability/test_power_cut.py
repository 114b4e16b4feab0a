"""Durability off the step path: a session killed (SIGKILL) between an output's write, its
rename, its background sync and the commit that names it, then put through a power cut (every
saved output not yet synced with its folder is deleted, from the session's I/O journal), loses
nothing that its archive or its saved state names. The restarted session ends with every
archived pointer readable by ``read_file``.

The kill points, per session: the rename of a saved output (killed after it: whole in the page
cache, not synced), its background data sync and its folder's sync (before and after), the
archive's append and the host's state save (before: the commit about to be made, after: made).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from copaw_context.core.toolresults.offload_names import referenced_offload_paths
from copaw_context.core.tools.read_tool import ReadFileTool
from tests.reliability import crash_child
from tests.reliability.budget import SOAK, record
from tests.reliability.drivers import HostDriver
from tests.reliability.power_cut import (
    ROLES,
    cut_power,
    referenced_files,
    role_of,
    saved_outputs,
)
from tests.reliability.processes import run_child
from tests.reliability.workspace_checks import archived_texts, check_workspace, saved_keys

_KILLED = -9
_STATUS_LOST = 255


def choose(points: list[dict[str, str]]) -> list[tuple[tuple[str, int], str]]:
    """Per role: its point a third into the session and its last (soak: every one), killed
    before and after it (a rename: after, when the output is whole but not synced)."""
    counts: dict[str, int] = {}
    for point in points:
        role = role_of(point["kind"], point["path"])
        if role is not None:
            counts[role] = counts.get(role, 0) + 1
    trials: list[tuple[tuple[str, int], str]] = []
    for role, count in sorted(counts.items()):
        picked = range(1, count + 1) if SOAK else sorted({max(1, count // 3), count})
        phases = ("after",) if role == "rename" else ("before", "after")
        trials += [((role, n), phase) for n in picked for phase in phases]
    return trials


def census(driver: HostDriver, directory: Path) -> list[dict[str, str]]:
    workspace, listing = directory / "census", directory / "census.jsonl"
    workspace.mkdir()
    code = run_child(crash_child.run, (driver.name, str(workspace), None, "", str(listing)))
    assert code == 0, f"the session without a crash exited with {code}"
    return [json.loads(line) for line in listing.read_text().splitlines()]


async def _read_pointers(workspace: Path) -> int:
    """Every pointer of the archive followed by ``read_file``: each reads its whole output."""
    tool = ReadFileTool.from_config(crash_child.config(), workspace)
    pointers = referenced_offload_paths(archived_texts(workspace))
    for pointer in pointers:
        result, _ = await tool.read(pointer)
        assert result.ok, f"read_file could not read {pointer}: {result}"
        assert result.total_lines and result.total_lines > 1, pointer
    return len(pointers)


def trial(driver: HostDriver, directory: Path, at: tuple[str, int], phase: str) -> dict[str, Any]:
    label = f"{at[0].replace(' ', '-')}-{at[1]}-{phase}"
    workspace, journal = directory / f"trial-{label}", directory / f"journal-{label}"
    workspace.mkdir()
    code = run_child(crash_child.run, (driver.name, str(workspace), at, phase, None, str(journal)))
    assert code in (_KILLED, 0, _STATUS_LOST), f"the session exited with {code}"
    lost = cut_power(workspace, journal)
    named = referenced_files(workspace)
    missing = sorted(named - set(saved_outputs(workspace)))
    assert not missing, (
        f"after a kill at {at}/{phase} and a power cut, the archive or the saved state names "
        f"outputs that were never synced: {missing[:5]} (lost: {lost[:5]})"
    )
    expected = asyncio.run(saved_keys(driver, workspace))
    finished = directory / f"restart-{label}.jsonl"
    restarted = run_child(crash_child.run, (driver.name, str(workspace), None, "", str(finished)))
    ran = restarted == 0 or (restarted == _STATUS_LOST and finished.is_file())
    assert ran, f"the restart after a kill at {at}/{phase} exited with {restarted}"
    checked = check_workspace(workspace, expected)
    pointers = asyncio.run(_read_pointers(workspace))
    return checked | {
        "killed": code == _KILLED,
        "cut": len(lost),
        "named": len(named),
        "pointers": pointers,
    }


def test_a_kill_then_a_power_cut_loses_nothing_a_commit_names(driver: HostDriver) -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        points = census(driver, directory)
        trials = choose(points)
        assert {role for (role, _), _ in trials} == set(ROLES), trials
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda t: trial(driver, directory, *t), trials))
    killed = sum(r["killed"] for r in results)
    # Points late in a session shift a little between runs (background syncs): a trial that
    # never reaches its point still runs to its end and is checked.
    assert killed >= len(trials) * 3 // 4, f"only {killed} of {len(trials)} trials were killed"
    assert sum(r["cut"] for r in results) > 0, "no power cut removed an unsynced output"
    assert sum(r["pointers"] for r in results) > 0, "no archived pointer was followed"
    record(
        "power_cut",
        io_points=len(points),
        trials=len(trials),
        killed=killed,
        outputs_cut=sum(r["cut"] for r in results),
        pointers_read=sum(r["pointers"] for r in results),
        **{counted: sum(r[counted] for r in results) for counted in ("lost", "dangling_notices")},
    )
