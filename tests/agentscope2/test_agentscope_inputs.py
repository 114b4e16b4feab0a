"""AgentScope's own context rules still apply in light mode (defects issue, item 4).

The image limit (``max_image_num``), an explicit ``context_config`` passed to
``compress_context`` (its compression tool does) and ``instructions`` are honoured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.agent import ContextConfig
from agentscope.message import AssistantMsg, Base64Source, DataBlock, HintBlock, TextBlock, UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step
from tests.helpers import make_agent

SUMMARY = """## Goal
- Keep the service up

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] Looked at the logs
### In Progress
- [ ] Nothing
### Blocked
- (none)

## Key Decisions
- (none)

## Next Steps
1. Continue

## Critical Context
- (none)"""


def config(window: int, **light: Any) -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "light_context_config": {"token_counter": "o200k_base", **light},
            }
        }
    )


def image(n: int) -> DataBlock:
    return DataBlock(source=Base64Source(data=f"iVBORw0KGgo{n:04d}", media_type="image/png"))


def images_sent(call: ModelCall) -> int:
    return sum(
        1
        for msg in call.messages
        for block in msg.content
        if isinstance(block, DataBlock) and block.source.media_type.startswith("image/")
    )


async def test_the_image_limit_still_applies(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(200_000), tmp_path)
    model = ScriptedChatModel([text_step("I see them")])
    agent = await make_agent(hook, model)
    agent.context_config.max_image_num = 5
    agent.state.context = [
        AssistantMsg("assistant", [TextBlock(text=f"screenshot {n}"), image(n)]) for n in range(8)
    ]
    await agent.reply(UserMsg("user", "what changed?"))
    assert images_sent(model.calls[0]) == 5
    kept = [b for m in agent.state.context for b in m.content if isinstance(b, DataBlock)]
    assert [b.source.data for b in kept] == [image(n).source.data for n in range(3, 8)]


def history(turns: int) -> list[Any]:
    messages: list[Any] = []
    for n in range(turns):
        messages.append(UserMsg("user", f"question {n}: " + "details " * 150))
        messages.append(AssistantMsg("assistant", [TextBlock(text=f"answer {n}: " + "ok " * 150)]))
    return messages


async def test_instructions_reach_the_compactor(tmp_path: Path) -> None:
    requests: list[str] = []

    def summarise(call: ModelCall) -> list[TextBlock]:
        requests.append(call.messages[-1].get_text_content() or "")
        return [TextBlock(text=SUMMARY)]

    compactor = ScriptedChatModel([summarise])
    hook = MemoryCompactionHook(config(4000, compactor="llm"), tmp_path, compactor_model=compactor)
    agent = await make_agent(hook, ScriptedChatModel([]))
    agent.state.context = history(14)
    await agent.compress_context(
        instructions=HintBlock(hint="Keep the release codename BLUEFIN in the summary.")
    )
    assert len(requests) == 1 and "BLUEFIN" in requests[0]
    assert "Keep the service up" in str(agent.state.summary)


async def test_an_explicit_context_config_sets_the_threshold(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(
        config(20_000, compactor="extractive"), tmp_path, on_event=events.append
    )
    agent = await make_agent(hook, ScriptedChatModel([], context_size=20_000))
    agent.state.context = history(24)  # about 40% of the window: under our 0.8 threshold
    await agent.compress_context()
    assert events == [] and len(agent.state.context) == 48
    await agent.compress_context(
        context_config=ContextConfig(trigger_ratio=0.3, reserve_ratio=0.05)
    )
    started, event = events
    assert started.kind == "compaction_started" and started.threshold_tokens == 6000
    assert event.kind == "compaction" and event.threshold_tokens == 6000
    assert event.tokens_after < 6000 and len(agent.state.context) < 48
