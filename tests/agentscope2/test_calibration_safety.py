"""Usage calibration can never push the model input past the window (defects issue, items 1, 15).

A provider that misreports usage (1 token, 0, a partial streamed figure, cached tokens
reported apart) must not shrink our counts; calibration follows the counter actually in use.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import UserMsg
from agentscope.model import ChatUsage

from copaw_context import MemoryCompactionHook
from copaw_context.agentscope2 import token_report
from copaw_context.cli.demo import demo_policy, make_demo_tools
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.tokens import UsageCalibration
from copaw_context.core.tokens import counters as tokens
from copaw_context.testing import (
    ModelCall,
    ScriptedChatModel,
    scaled_usage,
    text_bytes,
    text_step,
)
from tests.helpers import make_agent

WINDOW = 24_000


def light_config(window: int, **light: Any) -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "light_context_config": {
                    "compactor": "extractive",
                    "tool_result_pruning_config": {
                        "pruning_recent_msg_max_bytes": 8000,
                        "pruning_old_msg_max_bytes": 1000,
                    },
                    **light,
                },
            }
        }
    )


def input_tokens(call: ModelCall) -> int:
    """The model input in the estimate counter's own units (UTF-8 bytes / 4, uncalibrated)."""
    return math.ceil(text_bytes(call) / 4)


async def run_tool_heavy_session(
    tmp_path: Path, usage: Any, steps: int = 110
) -> tuple[Any, ScriptedChatModel, MemoryCompactionHook]:
    hook = MemoryCompactionHook(light_config(WINDOW, token_counter="estimate"), tmp_path)
    policy = demo_policy(steps, parallel_every=4)
    model = ScriptedChatModel([policy] * (steps * 3), context_size=WINDOW, usage=usage)
    agent = await make_agent(hook, model, make_demo_tools(seed=5))
    for turn in policy.user_turns():
        await agent.reply(UserMsg("user", turn))
    assert policy.done
    return agent, model, hook


@pytest.mark.parametrize(
    "usage",
    [
        pytest.param(lambda call: (1, 10), id="reports-1"),
        pytest.param(lambda call: (0, 10), id="reports-0"),
        pytest.param(scaled_usage(0.3), id="partial-figure"),
    ],
)
async def test_misreported_usage_never_pushes_the_input_past_the_window(
    tmp_path: Path, usage: Any
) -> None:
    agent, model, hook = await run_tool_heavy_session(tmp_path, usage)
    calls = [call for call in model.calls if call.tools]
    assert len(calls) >= 100
    largest = max(input_tokens(call) for call in calls)
    assert largest <= WINDOW, f"a model input of {largest} tokens for a {WINDOW}-token window"
    calibration = await hook.calibration_for(agent)
    assert calibration.factor == 1.0 and calibration.samples == 0
    report = await token_report(hook, agent)
    assert report.total >= report.raw, "/context must not under-report either"


async def test_plausible_usage_still_calibrates_and_stays_in_the_window(tmp_path: Path) -> None:
    agent, model, hook = await run_tool_heavy_session(tmp_path, scaled_usage(1.6), steps=60)
    calibration = await hook.calibration_for(agent)
    assert calibration.samples > 0 and calibration.factor > 1.3
    for call in model.calls:
        if call.tools:  # the provider counts 1.6x our estimate: that is what must fit
            assert input_tokens(call) * 1.6 <= WINDOW


async def test_cached_tokens_reported_apart_are_counted(tmp_path: Path) -> None:
    def anthropic_style(call: ModelCall) -> ChatUsage:
        whole = int(text_bytes(call) / 4 * 1.5)
        fresh = whole // 5
        return ChatUsage(
            input_tokens=fresh, output_tokens=5, time=0.0, cache_input_tokens=whole - fresh
        )

    hook = MemoryCompactionHook(light_config(200_000, token_counter="estimate"), tmp_path)
    model = ScriptedChatModel([text_step("a"), text_step("b")], usage=anthropic_style)
    agent = await make_agent(hook, model)
    await agent.reply(UserMsg("user", "hello " * 200))
    await agent.reply(UserMsg("user", "again " * 200))
    calibration = await hook.calibration_for(agent)
    assert calibration.samples == 2
    assert calibration.factor > 1.2, "the cached share must count as input"


async def test_implausible_usage_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hook = MemoryCompactionHook(light_config(200_000, token_counter="estimate"), tmp_path)
    model = ScriptedChatModel([text_step("a"), text_step("b")], usage=lambda call: (1, 1))
    agent = await make_agent(hook, model)
    with caplog.at_level("WARNING", logger="copaw_context"):
        await agent.reply(UserMsg("user", "hello"))
        await agent.reply(UserMsg("user", "hello again"))
    warnings = [r for r in caplog.records if "ignoring reported usage" in r.getMessage()]
    assert len(warnings) == 1


def test_calibration_band() -> None:
    calibration = UsageCalibration()
    assert not calibration.observe(1000, 1, byte_estimate=1000)
    assert not calibration.observe(1000, 3000, byte_estimate=1000)
    assert calibration.samples == 0 and calibration.factor == 1.0
    assert calibration.observe(1000, 1500, byte_estimate=1000)
    assert calibration.factor == pytest.approx(1.25)
    restored = UsageCalibration.from_dict(calibration.as_dict())
    assert (restored.factor, restored.samples) == (calibration.factor, 1)
    assert UsageCalibration.from_dict({"factor": "x"}).factor == 1.0


async def test_calibration_follows_the_counter_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(package: str, *parts: str) -> bytes:
        raise FileNotFoundError(f"{'/'.join(parts)} is missing from the {package!r} package")

    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_warned", set())
    monkeypatch.setattr(tokens, "_package_file", missing)
    hook = MemoryCompactionHook(light_config(200_000, token_counter="qwen"), tmp_path)
    model = ScriptedChatModel(
        [text_step("a"), text_step("b")], model_name="qwen-max", usage=scaled_usage(2.0)
    )
    agent = await make_agent(hook, model)
    await agent.reply(UserMsg("user", "hello " * 100))
    report = await token_report(hook, agent)
    assert report.counter.startswith("estimate")
    assert await hook.calibrates(agent)
    report = await token_report(hook, agent)
    assert report.calibration > 1.3 and report.total > report.raw
