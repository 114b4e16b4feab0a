"""A real agent whose separate compactor model has a smaller window (4K) than the agent's
(16K): one compaction sends about ``input / room`` compactor requests, each within the
compactor's window and (but the last) filled to at least half its room, not one request a
message (peers D3)."""

from __future__ import annotations

import asyncio
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from copaw_context.core.summary.prompts import CONVERSATION_CLOSE, CONVERSATION_OPEN
from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import o200k
from tests.reliability.provider_rules import input_tokens
from tests.summaries import six_section_summary

WINDOW, COMPACTOR_WINDOW, TURNS = 16000, 4000, 15


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def test_a_small_compactor_gets_full_stages(driver: HostDriver) -> None:
    counter = o200k()
    sent: list[tuple[int, int]] = []  # (request tokens, transcript tokens)
    events: list[Any] = []
    cpu: list[float] = []  # CPU seconds of the turn that compacted

    async def summarise(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        text = "\n".join(_text(m.get("content")) for m in formatted["openai"])
        transcript = text.split(CONVERSATION_OPEN, 1)[1].split(CONVERSATION_CLOSE, 1)[0]
        tokens = input_tokens(formatted["openai"], driver.tool_schemas(call), counter)
        sent.append((tokens, counter.count(transcript)))
        return driver.text_step(six_section_summary(10))

    async def answer(call: Any) -> list[Any]:
        return driver.text_step("done " + "fine " * 300)

    async def main(ws: Path) -> None:
        compactor = driver.model([summarise] * 100, context_size=COMPACTOR_WINDOW)
        hook = driver.hook(
            agent_config(WINDOW, "llm"), ws, compactor=compactor, on_event=events.append
        )
        agent = await driver.agent(hook, driver.model([answer] * TURNS, context_size=WINDOW), [])
        for i in range(TURNS):
            started, seen = time.process_time(), len(events)
            await driver.ask(agent, f"q{i} " + "words " * 700)
            if any(e.kind == "compaction" for e in events[seen:]):
                cpu.append(time.process_time() - started)

    with tempfile.TemporaryDirectory() as name:
        asyncio.run(main(Path(name)))
    compactions = [e for e in events if e.kind == "compaction"]
    assert len(compactions) == 1 and compactions[0].method == "llm", compactions
    assert sent and max(tokens for tokens, _ in sent) <= COMPACTOR_WINDOW, sent
    # Each request's room: the window minus all but its transcript, minus a reply reserve of
    # at most a quarter of the window.
    rooms = [COMPACTOR_WINDOW - (tokens - part) - COMPACTOR_WINDOW // 4 for tokens, part in sent]
    fills = [part / room for (_, part), room in zip(sent, rooms, strict=True)]
    total = sum(part for _, part in sent)
    assert len(sent) <= math.ceil(total / min(rooms)) + 1, (sent, rooms)
    assert all(fill >= 0.5 for fill in fills[:-1]), fills
    record(
        "compactor_stages",
        compactor_requests=len(sent),
        transcript_tokens=total,
        mean_fill=round(sum(fills) / len(fills), 3),
        largest_request=max(tokens for tokens, _ in sent),
        compacted_turn_cpu_seconds=round(sum(cpu), 3),
    )
