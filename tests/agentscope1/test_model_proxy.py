"""The wrapped 1.x model: overflow recovery, usage calibration, streams, other calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentscope.message import Msg
from agentscope.model._model_usage import ChatUsage

from copaw_context.core.events import ContextEvent
from copaw_context.core.host.models import reported_usage
from copaw_context.testing import (
    ModelCall,
    openai_pairing_problems,
    scaled_usage,
    text_bytes,
    text_step,
    tool_calls_step,
)
from tests.agentscope1.helpers import build_agent, settings
from tests.reliability.as1_driver import As1Driver

OVERFLOW = (
    "Error code: 400 - This model's maximum context length is 4000 tokens. However, your "
    "messages resulted in 9000 tokens. Please reduce the length of the messages."
)


async def test_an_overflow_is_compacted_and_retried_once(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    failed: list[ModelCall] = []

    def too_long(call: ModelCall) -> list[object]:
        failed.append(call)
        raise RuntimeError(OVERFLOW)

    agent, hook, model = await build_agent(
        tmp_path,
        [too_long, text_step("recovered")],
        config=settings(4000, compactor="extractive"),
        context_size=4000,
    )
    hook.engine.context.on_event = events.append
    await As1Driver().seed(agent, 4)
    reply = await agent(Msg("user", "next step?", "user"))
    assert reply.get_text_content() == "recovered"
    retried = model.calls[-1]
    assert text_bytes(retried) < text_bytes(failed[0]) / 2, "the retry must send much less"
    assert openai_pairing_problems(retried.formatted) == []
    assert "next step?" in str(retried.formatted[-1])
    kinds = [e.kind for e in events]
    assert "overflow_recovery" in kinds and "compaction" in kinds


async def test_a_second_overflow_raises_the_first_error(tmp_path: Path) -> None:
    agent, hook, _ = await build_agent(
        tmp_path,
        [RuntimeError(OVERFLOW), RuntimeError(OVERFLOW + " again")],
        config=settings(4000, compactor="extractive"),
        context_size=4000,
    )
    await As1Driver().seed(agent, 4)
    with pytest.raises(RuntimeError, match="resulted in 9000 tokens. Please") as caught:
        await agent.reply(Msg("user", "next step?", "user"))
    assert "again" in str(caught.value.__cause__)


async def test_only_the_reasoning_call_is_ours(tmp_path: Path) -> None:
    """The summary 1.x asks for after max_iters is passed through, error and all."""

    def probe(query: str) -> str:
        """Probe.

        Args:
            query (`str`): A query.
        """
        return "probed"

    agent, hook, model = await build_agent(
        tmp_path,
        [tool_calls_step(("probe", {"query": "x"})), RuntimeError(OVERFLOW)],
        [probe],
        max_iters=1,
    )
    with pytest.raises(RuntimeError, match="maximum context length"):
        await agent.reply(Msg("user", "go", "user"))
    assert model.calls[-1].tools == [], "the second call was 1.x's own summary request"


async def test_usage_calibrates_and_streams_pass_through(tmp_path: Path) -> None:
    def probe(query: str) -> str:
        """Probe.

        Args:
            query (`str`): A query.
        """
        return "probed " * 50

    agent, hook, model = await build_agent(
        tmp_path,
        [tool_calls_step(("probe", {"query": "x"}), ("probe", {"query": "y"})), text_step("done")],
        [probe],
        config=settings(token_counter="estimate"),
        stream=True,
        usage=scaled_usage(1.5),
        parallel_tool_calls=True,
    )
    reply = await agent(Msg("user", "go", "user"))
    assert reply.get_text_content() == "done"
    calibration = await hook.calibration_for(agent)
    assert calibration.samples == 2 and calibration.factor > 1.2
    assert all(openai_pairing_problems(c.formatted) == [] for c in model.calls)


def reported_input_tokens(usage: ChatUsage | None, model: object) -> int | None:
    """The prompt size a 1.x ``ChatUsage`` states (1.x drops the cache figures)."""
    reported = reported_usage(usage, model)
    return reported.prompt_tokens() if reported is not None else None


def test_anthropic_usage_without_the_cached_share_is_not_used() -> None:
    usage = ChatUsage(input_tokens=1200, output_tokens=3, time=0.0)

    class AnthropicChatModel:
        pass

    class OpenAIChatModel:
        pass

    assert reported_input_tokens(usage, AnthropicChatModel()) is None
    assert reported_input_tokens(usage, OpenAIChatModel()) == 1200
    assert reported_input_tokens(None, OpenAIChatModel()) is None
