"""The kept tail starts at a user turn ("不拆分 user-assistant 对话对"; defects issue, item 17)."""

from __future__ import annotations

from pathlib import Path

from agentscope.message import UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ScriptedChatModel, text_step
from tests.helpers import make_agent


async def test_a_kept_reply_always_has_its_request(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    config = parse_running_config(
        {
            "running": {
                "max_input_length": 4000,
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": "extractive",
                    "context_compact_config": {"reserve_threshold_ratio": 0.3},
                },
            }
        }
    )
    hook = MemoryCompactionHook(config, tmp_path, on_event=events.append)
    answers = [text_step(f"answer {n}: done.") for n in range(30)]
    model = ScriptedChatModel(answers, context_size=4000)
    agent = await make_agent(hook, model)
    for n in range(30):
        details = "the log says the detail is fine. " * 40
        await agent.reply(UserMsg("user", f"question {n}: what about part {n}? {details}"))
    assert len([e for e in events if e.kind == "compaction"]) >= 3
    for call in model.calls:
        conversation = [m for m in call.messages if m.role != "system"]
        if agent.state.summary and "## Goal" in (conversation[0].get_text_content() or ""):
            conversation = conversation[1:]
        assert conversation[0].role == "user", "a reply was kept without the request it answers"
        assert (conversation[0].get_text_content() or "").startswith("question")
