"""Thinking blocks are counted whenever the formatter sends them back (defects issue, item 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agentscope import formatter as formatters
from agentscope.message import AssistantMsg, TextBlock, ThinkingBlock, UserMsg

from copaw_context import MemoryCompactionHook
from copaw_context.agentscope2 import token_report
from copaw_context.agentscope2.thinking import thinking_policy
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ScriptedChatModel, text_step
from tests.helpers import make_agent


class _Model:
    def __init__(self, formatter: Any) -> None:
        self.formatter = formatter


def plain() -> ThinkingBlock:
    return ThinkingBlock(thinking="step by step")


def signed() -> ThinkingBlock:
    return ThinkingBlock(thinking="step by step", signature="EqQBCkYIARgCKkA")


def responses_item() -> ThinkingBlock:
    return ThinkingBlock(thinking="step by step", reasoning_item_id="rs_0123")


async def sends(formatter: Any, block: ThinkingBlock) -> bool:
    policy = await thinking_policy(_Model(formatter))
    return policy if isinstance(policy, bool) else policy(block)


@pytest.mark.parametrize(
    ("formatter", "expected"),
    [
        (formatters.OpenAIChatFormatter(), (False, False, False)),
        (formatters.DeepSeekChatFormatter(), (True, True, True)),
        (formatters.MoonshotChatFormatter(), (True, True, True)),
        (formatters.VolcengineChatFormatter(), (True, True, True)),
        (formatters.GeminiChatFormatter(), (True, True, True)),
        (formatters.AnthropicChatFormatter(), (False, True, False)),
        (formatters.OpenAIResponseFormatter(), (False, False, True)),
        (formatters.DashScopeChatFormatter(), (False, False, False)),
        (
            formatters.DashScopeChatFormatter(input_types=["text/plain", "application/x-thinking"]),
            (True, True, True),
        ),
    ],
    ids=lambda value: type(value).__name__ if not isinstance(value, tuple) else "",
)
async def test_the_probe_follows_each_formatter(formatter: Any, expected: tuple[bool, ...]) -> None:
    got = tuple([await sends(formatter, block()) for block in (plain, signed, responses_item)])
    assert got == expected


async def test_unknown_or_failing_formatters_count_thinking() -> None:
    class Broken:
        async def format(self, messages: Any) -> Any:
            raise RuntimeError("cannot format")

    assert await thinking_policy(_Model(Broken())) is True
    assert await thinking_policy(object()) is True


async def test_thinking_sent_by_the_formatter_is_counted(tmp_path: Path) -> None:
    config = parse_running_config(
        {"running": {"light_context_config": {"compactor": "extractive"}}}
    )
    reports = {}
    for name, formatter in (
        ("openai", formatters.OpenAIChatFormatter()),
        ("moonshot", formatters.MoonshotChatFormatter()),
    ):
        hook = MemoryCompactionHook(config, tmp_path / name)
        model = ScriptedChatModel([text_step("ok")], model_name="kimi-k2-thinking")
        model.formatter = formatter
        agent = await make_agent(hook, model)
        agent.state.context = [
            UserMsg("user", "plan it"),
            AssistantMsg(
                "assistant",
                [ThinkingBlock(thinking="consider " * 2000), TextBlock(text="planned")],
            ),
        ]
        reports[name] = await token_report(hook, agent)
    assert reports["moonshot"].messages > reports["openai"].messages + 1500
