"""Ports LangChain's SummarizationMiddleware trim_tokens_to_summarize case: a compactor model
with a smaller window (4K) than the agent's (32K) gets requests that fit its window, packed
so that one compaction does not cost one compactor call per message (peers D3, fixed)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.reliability.agent_session import agent_config
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import o200k
from tests.reliability.provider_rules import input_tokens
from tests.summaries import six_section_summary


def test_small_compactor_window_packs_stages(driver: HostDriver, tmp_path: Path) -> None:
    window, compactor_window = 32000, 4000
    sizes: list[int] = []
    events: list[Any] = []

    async def main(ws: Path) -> None:
        async def summarise(call: Any) -> list[Any]:
            formatted = await driver.provider_inputs(call)
            sizes.append(input_tokens(formatted["openai"], driver.tool_schemas(call), o200k()))
            return driver.text_step(six_section_summary(10))

        async def answer(call: Any) -> list[Any]:
            return driver.text_step("done " + "fine " * 300)

        compactor = driver.model([summarise] * 400, context_size=compactor_window)
        hook = driver.hook(
            agent_config(window, "llm"), ws, compactor=compactor, on_event=events.append
        )
        agent = await driver.agent(hook, driver.model([answer] * 30, context_size=window), [])
        for i in range(30):
            await driver.ask(agent, f"q{i} " + "words " * 700)

    asyncio.run(main(tmp_path))
    compactions = [e for e in events if e.kind == "compaction"]
    assert compactions and all(e.method == "llm" for e in compactions)
    assert max(sizes) <= compactor_window, sizes
    per_compaction = len(sizes) / len(compactions)
    assert per_compaction <= 15, (
        f"{len(sizes)} compactor requests for {len(compactions)} compaction(s), the largest "
        f"{max(sizes)} tokens of a {compactor_window}-token window"
    )
