"""The combined file of many parallel results stays named in the context, so the TTL
cleanup keeps it while the results point into it (found from outside: a later pass cut the
first pointer, the only one naming the file, and the cleanup then deleted it while 119
results said "In the file named above")."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver

WINDOW, COUNT = 4000, 120


def payload(index: int) -> str:
    return "".join(f"result {index:04d} row {r:04d}\n" for r in range(40))[:800]


def test_the_combined_file_stays_named_and_survives_the_cleanup(driver: HostDriver) -> None:
    inputs: list[list[dict[str, Any]]] = []

    def fetch(index: int) -> str:
        """Fetch one record.

        Args:
            index (`int`): Record number.
        """
        return payload(index)

    async def first(call: Any) -> Any:
        inputs.append((await driver.provider_inputs(call))["openai"])
        return driver.tool_step([("fetch", {"index": n}, None) for n in range(COUNT)])

    async def answer(call: Any) -> Any:
        inputs.append((await driver.provider_inputs(call))["openai"])
        return driver.text_step("done")

    async def main(workspace: Path) -> dict[str, Any]:
        hook = driver.hook(agent_config(WINDOW, "extractive"), workspace)
        model = driver.model([first, answer, answer], context_size=WINDOW)
        agent = await driver.agent(hook, model, [fetch])
        await driver.ask(agent, "Fetch every record.")
        files = {p.name: p.stat().st_size for p in (workspace / "tool_result").glob("*.txt")}
        combined = max(files, key=lambda name: files[name])
        named_after_turn = combined in str(inputs[-1])
        old = time.time() - 400 * 86400  # far past the retention
        for path in (workspace / "tool_result").glob("*.txt"):
            os.utime(path, (old, old))
        hook.engine.context.store._last_cleanup = None  # the hourly throttle has passed
        await driver.ask(agent, "Which record mentions row 0007?")
        return {
            "results": COUNT,
            "pointers": str(inputs[-1]).count("In the file named above"),
            "named_after_turn": named_after_turn,
            "named_next_turn": combined in str(inputs[-1]),
            "kept_after_cleanup": (workspace / "tool_result" / combined).exists(),
        }

    with tempfile.TemporaryDirectory() as name:
        figures = asyncio.run(main(Path(name)))
    assert figures["named_after_turn"], figures  # the first pointer was not cut
    assert figures["kept_after_cleanup"], figures
    record("combined_pointers", **figures)
