"""What the QwenPaw attack tests of both majors share: compactor answers (down, hanging, junk,
naming the sessions it was given) behind QwenPaw's scripted agent, providers' real "input too
long" errors, the agent's own model calls and their o200k size, and the check every agent
input must pass."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

from copaw_context.testing import ModelCall, ScriptedChatModel, openai_pairing_problems, text_step
from tests.reliability.invariants import o200k
from tests.reliability.provider_rules import input_tokens
from tests.summaries import PREVIOUS_SUMMARY

__all__ = [
    "OVERFLOWS",
    "PROVIDER_LIMIT",
    "agent_calls",
    "assert_inputs_fit",
    "call_tokens",
    "compactor_hangs",
    "compactor_junk",
    "compactor_raises",
    "overflow_once",
    "tagged_summary",
    "with_compactor",
]

Step = Callable[[ModelCall], Any]

PROVIDER_LIMIT = 14000  # what the providers below say their limit is

OVERFLOWS = {
    "openai": "Error code: 400 - {'error': {'message': \"This model's maximum context length "
    "is 14000 tokens. However, your messages resulted in 15801 tokens. Please reduce the "
    "length of the messages.\", 'type': 'invalid_request_error', 'param': 'messages', "
    "'code': 'context_length_exceeded'}}",
    "anthropic": "Error code: 400 - {'type': 'error', 'error': {'type': "
    "'invalid_request_error', 'message': 'prompt is too long: 15801 tokens > 14000 maximum'}}",
    "dashscope": "<400> InternalError.Algo.InvalidParameter: Range of input length should "
    "be [1, 14000]",
}
"""Providers' "input too long" errors as their clients raise them, by provider."""


class _Overflow(Exception):
    """What a provider's client raises (only its text says why)."""


def overflow_once(agent: Step, text: str) -> tuple[Step, list[int]]:
    """``agent``, its first call over :data:`PROVIDER_LIMIT` tokens raising ``text``; the
    token counts of the calls that raised."""
    raised: list[int] = []

    def step(call: ModelCall) -> Any:
        tokens = call_tokens(call) if call.tools else 0
        if not raised and tokens > PROVIDER_LIMIT:
            raised.append(tokens)
            raise _Overflow(text)
        return agent(call)

    return step, raised


def with_compactor(agent: Step, answer: Step) -> Step:
    """``agent`` (QwenPaw's scripted agent) for the calls with tools; the compactor's calls
    (no tools) answered by ``answer``."""

    def step(call: ModelCall) -> Any:
        return answer(call) if not call.tools else agent(call)

    return step


def compactor_raises(call: ModelCall) -> Any:
    raise RuntimeError("Error code: 503 - upstream connect error (the provider is down)")


def compactor_junk(call: ModelCall) -> Any:
    return text_step("¯\\_(ツ)_/¯ " * 3)


async def compactor_hangs(call: ModelCall) -> Any:
    await asyncio.sleep(120)
    return text_step(PREVIOUS_SUMMARY)


def tagged_summary(call: ModelCall) -> Any:
    """A compactor naming the sessions whose requests it was given (``tag-<x>``)."""
    tags = sorted(set(re.findall(r"tag-p[a-z]", json.dumps(call.formatted))))
    return text_step(PREVIOUS_SUMMARY + "\n- Sessions seen: " + " ".join(tags))


def agent_calls(model: ScriptedChatModel) -> list[ModelCall]:
    """The calls of QwenPaw's agent (those offering its shell tool)."""
    return [c for c in model.calls if "execute_shell_command" in c.tool_names]


def call_tokens(call: ModelCall) -> int:
    """o200k tokens of one model input, counted from scratch (texts, calls, schemas)."""
    return input_tokens(list(call.formatted), json.dumps(call.tools or []), o200k())


def assert_inputs_fit(model: ScriptedChatModel, window: int) -> None:
    """Every input QwenPaw's agent sent fits ``window`` and pairs each call with its result."""
    calls = agent_calls(model)
    assert calls, "QwenPaw's agent made no model call"
    for call in calls:
        assert call_tokens(call) <= window, call_tokens(call)
        assert openai_pairing_problems(call.formatted) == []
