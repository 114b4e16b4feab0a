"""One agent of the load test (tests/reliability/test_load.py): a real agent in a workspace it
shares with others, its own name and seeds, run in a thread, a task or a process.

Its tool prints framed outputs (``BEGIN job <seed>`` ... ``END job <seed>``, seeds unique to
the agent) large enough to be offloaded; its small window compacts every few turns, so the
agents append to the same archive file and offload into the same folder at once.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.reliability import crash_child
from tests.reliability.drivers import HostDriver, available_drivers

__all__ = ["agent_run", "run"]


async def agent_run(
    driver: HostDriver, workspace: Path, number: int, turns: int
) -> dict[str, list[str]]:
    """``turns`` user turns of agent ``number``; the part keys it created and those left in
    its context."""
    hook = driver.hook(crash_child.config(), workspace)
    policy = crash_child.Policy(driver)
    model = driver.model([policy] * (turns * 3 + 10), context_size=crash_child.WINDOW)
    agent = await driver.agent(hook, model, [crash_child.job], name=f"agent{number}")
    created: set[str] = set()
    for turn in range(turns):
        seed = number * 10_000 + turn
        await driver.ask(agent, f"turn {seed}: " + crash_child.framed("request", seed, 80))
        created.update(driver.context_keys(agent))
    return {"created": sorted(created), "context": driver.context_keys(agent)}


def run(driver_name: str, workspace: str, number: int, turns: int, out: str) -> None:
    """The entry of a child process: :func:`agent_run`, its result written to ``out``."""
    driver = next(d for d in available_drivers() if d.name == driver_name)
    result = asyncio.run(agent_run(driver, Path(workspace), number, turns))
    Path(out).write_text(json.dumps(result), encoding="utf-8")
