"""The QwenPaw 1.1 process the kill -9 test kills (``test_attacks_kill.py``): one agent of
QwenPaw's working folder HOME, the plugin loaded, turns on QwenPaw's request path until the
compactor is called; the compactor then writes MARKER and never answers, so the parent
kills the process in the middle of a compaction.

Usage: python -m tests.qwenpaw.kill_child HOME AGENT_ID MARKER
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any


async def _run(home: Path, agent_id: str, marker: Path) -> None:
    import pytest

    from copaw_context.testing import ModelCall, ScriptedChatModel
    from tests.qwenpaw.kit import MODEL, QwenPawSite, load_plugins, scripted_agent

    site = QwenPawSite(home, agent_id, pytest.MonkeyPatch(), window=20000)
    agent = scripted_agent()

    async def step(call: ModelCall) -> Any:
        if not call.tools:  # the compactor: mid-compaction from here on
            marker.write_text("compacting", encoding="utf-8")
            await asyncio.sleep(3600)
        return agent(call)

    site.model = ScriptedChatModel([step] * 400, model_name=MODEL)
    await load_plugins(home)
    workspace = await site.start()
    for i in range(10):
        await site.ask(workspace, f"turn {i}: count to 20000")


def main() -> None:
    home, agent_id, marker = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    os.environ["QWENPAW_WORKING_DIR"] = str(home)  # before QwenPaw is imported
    asyncio.run(_run(home, agent_id, marker))


if __name__ == "__main__":
    main()
