"""The process the crash tests kill: a real agent session that saves its state after each turn.

:func:`run` (the entry of a forked child) drives ``TURNS`` user turns of an agent whose
tools print large framed outputs (offloaded), one oversized request (saved whole, then cut)
and a small window (compactions, archive appends), saving the agent's state like a host
does (temp file, fsync, rename) after every turn, then ``/clear``. Every I/O call on the
workspace is an I/O point (``faults.watch_io``); the child SIGKILLs itself at the chosen
one. Started again without a kill point, it restores the last saved state and finishes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

from copaw_context.core.config.running import RunningConfig, parse_running_config
from tests.reliability.drivers import HostDriver, available_drivers
from tests.reliability.engine_session import filler
from tests.reliability.faults import IoEvent, watch_io

__all__ = ["TURNS", "WINDOW", "Policy", "framed", "run"]

TURNS = 5
WINDOW = 5000
_BIG_REQUEST_TURN = 2
_TURN = re.compile(r"turn (\d+)")


def framed(kind: str, seed: int, size: int) -> str:
    """A text whose first and last lines say it is complete: ``BEGIN kind seed`` ... ``END``."""
    return f"BEGIN {kind} {seed}\n{filler(size, seed)}\nEND {kind} {seed}\n"


def job(seed: int, size: int) -> str:
    """Run a job and return its log.

    Args:
        seed (`int`): Which job.
        size (`int`): About how many bytes of log.
    """
    return framed("job", seed, size)


def config() -> RunningConfig:
    return parse_running_config(
        {
            "running": {
                "max_input_length": WINDOW,
                "memory": {"enabled": False},
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": "extractive",
                    "tool_result_pruning_config": {
                        "pruning_recent_msg_max_bytes": 3000,
                        "pruning_old_msg_max_bytes": 600,
                    },
                },
            }
        }
    )


def request(turn: int) -> str:
    size = 12_000 if turn == _BIG_REQUEST_TURN else 80
    return f"turn {turn}: " + framed("request", turn, size)


class Policy:
    """The scripted model: two parallel jobs per turn, then a text answer."""

    def __init__(self, driver: HostDriver) -> None:
        self.driver = driver

    def __call__(self, call: Any) -> list[Any]:
        formatted = call.formatted
        if formatted[-1].get("role") == "tool":
            return self.driver.text_step("done")
        users = [json.dumps(m.get("content")) for m in formatted if m.get("role") == "user"]
        found = _TURN.search(users[-1]) if users else None
        turn = int(found.group(1)) if found else 99
        return self.driver.tool_step(
            [
                ("job", {"seed": turn * 10, "size": 7000}, None),
                ("job", {"seed": turn * 10 + 1, "size": 4000}, None),
            ]
        )


def save_state(path: Path, data: dict[str, Any]) -> None:
    """The host's state save: temp file, fsync, rename."""
    temp = path.with_name(path.name + ".tmp")
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


async def session(driver: HostDriver, workspace: Path) -> None:
    path = workspace / "state.json"
    saved = json.loads(path.read_text()) if path.exists() else {"turn": 0, "agent": None}
    hook = driver.hook(config(), workspace)
    model = driver.model([Policy(driver)] * 200, context_size=WINDOW)
    agent = await driver.agent(hook, model, [job])
    if saved["agent"]:
        await driver.load_state(agent, saved["agent"])
    for turn in range(saved["turn"], TURNS + 1):
        text = request(turn) if turn < TURNS else "/clear"
        await driver.ask(agent, text)
        save_state(path, {"turn": turn + 1, "agent": driver.save_state(agent)})


class KillPlan:
    """Kill at I/O point ``at`` (``phase``: before, mid (a torn write) or after); ``None``:
    only count the points (written to ``census`` as JSON lines)."""

    def __init__(self, at: int | None, phase: str, census: Path | None) -> None:
        self.at, self.phase, self.census = at, phase, census
        self.points: list[tuple[str, str]] = []

    def __call__(self, event: IoEvent) -> bool:
        if event.phase == "before":
            self.points.append((event.kind, event.path))
        if len(self.points) - 1 != self.at:
            return False
        if event.phase == self.phase:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.phase == "mid"  # at a write's "before": tear it (half, then "mid")


def run(driver_name: str, workspace: str, at: int | None, phase: str, census: str | None) -> None:
    """The child's entry: the session, killed at I/O point ``at`` (see :class:`KillPlan`)."""
    driver = next(d for d in available_drivers() if d.name == driver_name)
    root = Path(workspace)
    plan = KillPlan(at, phase, Path(census) if census else None)
    with watch_io(root, plan):
        asyncio.run(session(driver, root))
    if plan.census is not None:
        lines = [json.dumps({"kind": k, "path": os.path.relpath(p, root)}) for k, p in plan.points]
        plan.census.write_text("\n".join(lines) + "\n", encoding="utf-8")
