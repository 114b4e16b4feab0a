"""A hung summary backend behind a real agent of either major (found from outside): the
memory summaries follow the compactor's breaker and timeout instead of queueing one 120 s
call per compaction, and ``close()`` returns without waiting for them all."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from copaw_context.core.config.running import parse_running_config
from copaw_context.core.memory.instructions import summariser_system_prompt
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver

__all__ = ["test_a_hung_backend_neither_floods_the_summaries_nor_holds_up_close"]

TURNS = 12
LIMIT = 2
_MEMORY_PROMPT = summariser_system_prompt("en")[:60]


def big(n: int) -> str:
    """Return a big text.

    Args:
        n (`int`): which.
    """
    return f"result {n}: " + "lorem ipsum dolor sit amet " * 300


async def test_a_hung_backend_neither_floods_the_summaries_nor_holds_up_close(
    driver: HostDriver, tmp_path: Path
) -> None:
    compactor_calls: list[str] = []

    async def hang(call: Any) -> Any:
        sent = json.dumps(call.formatted, ensure_ascii=False)
        compactor_calls.append("memory" if _MEMORY_PROMPT in sent else "compaction")
        await asyncio.Event().wait()  # never answers

    config = parse_running_config(
        {
            "running": {
                "max_input_length": 6000,
                "light_context_config": {
                    "compactor_timeout_seconds": 0.05,
                    "compactor_retries": 0,
                    "compactor_failure_limit": LIMIT,
                },
            }
        }
    )
    compactor = driver.model([hang] * 200, context_size=6000)
    hook = driver.hook(config, tmp_path, compactor=compactor)
    steps: list[Any] = []
    for n in range(TURNS):
        steps += [driver.tool_step([("big", {"n": n}, None)]), driver.text_step(f"answer {n}")]
    model = driver.model(steps, context_size=6000)
    agent = await driver.agent(hook, model, [big])
    turns = 0
    for n in range(TURNS):
        question = f"question {n}: never delete the audit table. " + "please " * 100
        assert await driver.ask(agent, question) == f"answer {n}"
        turns += 1
    compactions = (await hook.agent_stats(agent))["compactions"]  # one summary each
    queued = hook.pending
    await asyncio.wait_for(hook.close(), 120)  # was: about one 120 s wait per summary
    memory_calls = compactor_calls.count("memory")
    assert hook.pending == 0
    assert compactions > LIMIT + 2, "the scenario did not compact enough to test the breaker"
    # LIMIT failures open the breaker: later summaries mostly do not call the hung model.
    assert LIMIT <= memory_calls < compactions, compactor_calls
    logs = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "memory").glob("*.md"))
    assert "never delete the audit table" in logs  # kept, without the model
    left = list((tmp_path / "memory" / ".pending").glob("*.json"))
    assert left == []  # close() had time for the extractive rest: nothing left over
    record(
        "memory_hung_backend",
        turns=turns,
        compactions=compactions,
        compaction_calls=compactor_calls.count("compaction"),
        memory_summary_calls=memory_calls,
        pending_at_close=queued,
        pending_files_left=len(left),
    )
