"""A session SIGKILLed from outside at random moments (the peers2 round's probe: a host
process killed by its supervisor at any instant), several times in one workspace
(each restart may be killed again while it flushes what the last one left), then run to its
end: nothing the saved states held is lost or archived twice, every archive line parses, no
notice names a missing or partial file. The suite's crash test kills once per workspace at
an I/O point its fault layer sees; here the kill lands anywhere, repeatedly. The suite runs
one workspace of 2 kills (3 of 6 under ``COPAW_SOAK=1``, and in
``scripts/ported_full_runs.py``, which prints the counted figures)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.reliability.budget import record, scaled
from tests.reliability.drivers import HostDriver
from tests.reliability.workspace_checks import check_workspace, saved_keys

ROOT = Path(__file__).resolve().parents[2]


def _start(workspace: Path, turns: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), AGENTSCOPE_DISABLE_CONSOLE_OUTPUT="true")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.ported.kill_child", str(workspace), str(turns)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ROOT,
    )


def _kill_after(process: subprocess.Popen[str], saves: int, delay: float) -> bool:
    """Wait for "ready" and ``saves`` saved turns, then SIGKILL after ``delay`` s; False
    when it ended first. Counting saved turns (not seconds) keeps the kill inside the run
    however fast the machine is."""
    assert process.stdout is not None
    seen = -1  # the "ready" line first
    while seen < saves:
        line = process.stdout.readline()
        if not line.startswith(("ready", "saved")):
            process.wait(60)
            return False
        seen += 1
    time.sleep(delay)
    if process.poll() is not None:
        return False
    process.send_signal(signal.SIGKILL)
    process.wait(60)
    return True


def killed_workspace(
    driver: HostDriver, workspace: Path, seed: int, kills: int, turns: int
) -> dict[str, int]:
    """Up to ``kills`` random kills, then a run to the end; the workspace's counted figures
    (fails naming what was lost, duplicated, torn or left dangling)."""
    rng = random.Random(seed)
    expected: set[str] = set()
    landed = 0
    for attempt in range(kills):
        # The first kill lands early in the first run; later ones anywhere in the next turns.
        saves, delay = (0, 0.02) if attempt == 0 else (rng.randint(0, 2), rng.uniform(0, 0.3))
        killed = _kill_after(_start(workspace, turns), saves, delay)
        landed += killed
        expected |= asyncio.run(saved_keys(driver, workspace))
        if not killed:
            break
    final = _start(workspace, turns)
    out, _ = final.communicate(timeout=300)
    assert final.returncode == 0, f"the last run exited with {final.returncode}: {out[-500:]}"
    saved = json.loads((workspace / "state.json").read_text())
    assert saved["turn"] == turns + 1, out[-300:]  # finished (by this run or a killed one)
    return {"kills": landed, "expected": len(expected)} | check_workspace(workspace, expected)


def test_random_external_kills_lose_and_duplicate_nothing(
    driver: HostDriver, tmp_path: Path
) -> None:
    workspaces, kills, turns = scaled(1, 3), scaled(2, 6), scaled(6, 12)
    results = []
    for seed in range(workspaces):
        workspace = tmp_path / f"ws{seed}"
        workspace.mkdir()
        results.append(killed_workspace(driver, workspace, seed, kills, turns))
    assert sum(r["kills"] for r in results) >= workspaces, results  # the kills landed
    record("ported_external_kills", workspaces=results)
