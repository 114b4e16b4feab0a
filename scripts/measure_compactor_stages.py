"""CPU time of one forced compaction (/compact) of a real agent whose compactor model has a
smaller window (4,000 tokens) than the agent's (32,000): 20 turns of ~1,000 tokens, then
/compact. Prints the compactor requests, their o200k size and the CPU seconds of the
/compact turn (median of 3). Measured, not asserted (peers D3).

Run: PYTHONPATH=. .venv/bin/python scripts/measure_compactor_stages.py
(1.x: AGENTSCOPE_DISABLE_CONSOLE_OUTPUT=true PYTHONPATH=. .venv-as1/bin/python ...)
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.reliability.agent_session import agent_config
from tests.reliability.drivers import available_drivers
from tests.reliability.invariants import o200k
from tests.reliability.provider_rules import input_tokens
from tests.summaries import six_section_summary

WINDOW, COMPACTOR_WINDOW, TURNS = 32000, 4000, 20
driver = available_drivers()[0]


async def once() -> tuple[float, list[int]]:
    """CPU seconds of /compact and the size of each compactor request."""
    sizes: list[int] = []
    events: list[Any] = []

    async def summarise(call: Any) -> list[Any]:
        formatted = await driver.provider_inputs(call)
        sizes.append(input_tokens(formatted["openai"], driver.tool_schemas(call), o200k()))
        return driver.text_step(six_section_summary(10))

    async def answer(call: Any) -> list[Any]:
        return driver.text_step("done " + "fine " * 300)

    with tempfile.TemporaryDirectory() as ws:
        compactor = driver.model([summarise] * 400, context_size=COMPACTOR_WINDOW)
        config = agent_config(WINDOW, "llm")
        hook = driver.hook(config, Path(ws), compactor=compactor, on_event=events.append)
        agent = await driver.agent(hook, driver.model([answer] * TURNS, context_size=WINDOW), [])
        for i in range(TURNS):
            await driver.ask(agent, f"q{i} " + "words " * 700)
        if any(e.kind == "compaction" for e in events):
            raise RuntimeError("compacted before /compact: lower TURNS")
        started = time.process_time()
        await driver.ask(agent, "/compact")
        cpu = time.process_time() - started
    done = [e for e in events if e.kind == "compaction"]
    if not done or done[-1].method != "llm":
        raise RuntimeError(f"expected one llm compaction, got {done}")
    return cpu, sizes


def main() -> None:
    logging.disable(logging.WARNING)
    runs = [asyncio.run(once()) for _ in range(3)]
    sizes = runs[0][1]
    print(
        f"{driver.name}: {len(sizes)} compactor requests, mean {statistics.mean(sizes):.0f} "
        f"max {max(sizes)} tokens of a {COMPACTOR_WINDOW}-token window; /compact CPU "
        f"{statistics.median(cpu for cpu, _ in runs):.3f} s (median of {len(runs)})"
    )


if __name__ == "__main__":
    main()
