"""The process the external-kill test SIGKILLs at random moments: crash_child's session
(offloaded tool outputs, an oversized request, compactions in a 5,000 window, a /compact
every third turn, the state saved after each turn like a host), longer, and started as a
plain subprocess so that the parent
kills it from outside at any instant (inside a write, a rename, a directory sync, the
interpreter's own buffered I/O), not only at the I/O points the suite's fault layer sees.

Usage: python -m tests.ported.kill_child WORKSPACE TURNS
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tests.reliability import crash_child
from tests.reliability.crash_child import Policy, config, job, request, save_state
from tests.reliability.drivers import available_drivers


async def session(workspace: Path, turns: int) -> None:
    driver = available_drivers()[0]
    path = workspace / "state.json"
    saved = json.loads(path.read_text()) if path.exists() else {"turn": 0, "agent": None}
    hook = driver.hook(config(), workspace)
    model = driver.model([Policy(driver)] * 400, context_size=crash_child.WINDOW)
    agent = await driver.agent(hook, model, [job])
    if saved["agent"]:
        await driver.load_state(agent, saved["agent"])
    print("ready", flush=True)
    for turn in range(saved["turn"], turns + 1):
        text = request(turn % 5) if turn < turns else "/clear"
        text = text.replace(f"turn {turn % 5}:", f"turn {turn}:", 1)
        await driver.ask(agent, text)
        if turn % 3 == 2 and turn < turns:  # archive-heavy: a /compact after every third turn
            await driver.ask(agent, "/compact")
        save_state(path, {"turn": turn + 1, "agent": driver.save_state(agent)})
        print(f"saved {turn + 1}", flush=True)


if __name__ == "__main__":
    asyncio.run(session(Path(sys.argv[1]), int(sys.argv[2])))
