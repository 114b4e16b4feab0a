"""Issue 17 item 12: when a summary must shrink, the constraints, decisions, exact errors and
paths go last. A real agent in a 2,500-token window whose compactor fails after its first
summary keeps the constraint the user stated in the first request ("Never modify vendor/
files"), under Constraints, in every later input, while long user requests (protected,
copied from the messages) are cut instead."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from copaw_context.core.summary import Summary, split_summary_message
from tests.reliability.agent_session import Action, AgentSession, Turn
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.engine_session import filler
from tests.summaries import six_section_summary

WINDOW = 2500
CONSTRAINT = "Never modify vendor/ files"


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


async def scenario(driver: HostDriver, directory: Path) -> dict[str, Any]:
    calls: list[int] = []
    events: list[Any] = []

    async def compactor_step(call: Any) -> Any:
        calls.append(1)
        if not any(e.kind == "compaction" for e in events):  # the first compaction: valid
            return driver.text_step(six_section_summary(1))
        raise RuntimeError("provider 500: upstream unavailable")

    session = AgentSession(
        driver,
        directory,
        window=WINDOW,
        compactor="llm",
        compactor_model=driver.model([compactor_step] * 400, context_size=WINDOW),
        light={"compactor_timeout_seconds": 0.2, "compactor_retries": 0},
        events=events,
    )
    await session.start()
    kept = 0
    for number in range(8):
        # The user states the constraint once, in the first request: a constraint of the
        # conversation (a compactor's invented one is no constraint: it moves, see
        # core/summary/rules.py).
        stated = f"{CONSTRAINT}. " if number == 0 else ""
        request = f"request {number}: {stated}" + filler(1500, number)
        await session.run(Turn(request, (Action(sizes=(1200,)),)))
        texts = [_text(m.get("content")) for m in session.last_input]
        compacted = [e for e in events if e.kind == "compaction"]
        summaries = [text for text in texts if "## Goal" in text]
        if compacted and summaries:
            doc = Summary.parse(split_summary_message(summaries[0]))
            constraints = "\n".join(doc.constraints)
            assert CONSTRAINT in constraints, f"turn {number}: the constraint was dropped"
            kept += 1
    compactions = [e for e in events if e.kind == "compaction"]
    failed = [e for e in compactions[1:] if e.method != "llm"]
    assert compactions and compactions[0].method == "llm", "the first summary was refused"
    assert failed, "no compaction met the failing compactor"
    return {
        "compactions": len(compactions),
        "failed_compactions": len(failed),
        "inputs_with_constraint": kept,
        "over_window": session.figures.over_window,
        "max_input_ratio": round(session.figures.max_input_ratio, 3),
    }


def test_a_failed_compaction_in_a_small_window_keeps_the_constraints(driver: HostDriver) -> None:
    with tempfile.TemporaryDirectory() as folder:
        figures = asyncio.run(scenario(driver, Path(folder)))
    assert figures["inputs_with_constraint"] > 0 and figures["over_window"] == 0
    record("summary_shrink_keeps_constraints", **figures)
