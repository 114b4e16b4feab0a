"""Reactive overflow recovery (defects issue, item 2).

When the provider rejects the input as too long, the context is compacted down to half the
reserve and the call is retried once; a second failure raises the original error. An event
is emitted either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agentscope.message import UserMsg

from copaw_context import ConfigError, ContextEvent, MemoryCompactionHook
from copaw_context.cli.demo import demo_policy, make_demo_tools
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.steps.overflow import is_context_overflow, overflow_figures
from copaw_context.testing import (
    ModelCall,
    ScriptedChatModel,
    openai_pairing_problems,
    text_bytes,
    text_step,
    tool_calls_step,
)
from tests.helpers import allow, lines_text, make_agent


class ProviderError(Exception):
    """Shaped like the errors of the openai / anthropic clients."""

    def __init__(self, message: str, *, status_code: int = 400, code: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code


@pytest.mark.parametrize(
    "error",
    [
        ProviderError("Error code: 400", code="context_length_exceeded"),
        ProviderError(
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130512 tokens."
        ),
        ProviderError("prompt is too long: 207605 tokens > 200000 maximum"),
        ProviderError(
            "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 30720]"
        ),
        ProviderError("Request Entity Too Large", status_code=413),
        RuntimeError("the request exceeds the available context size, try increasing it"),
        ValueError("Requested 9000 tokens, but the model's context length is 8192"),
    ],
)
def test_overflow_errors_are_recognised(error: Exception) -> None:
    assert is_context_overflow(error)


def test_an_overflow_raised_from_another_error_is_recognised() -> None:
    try:
        try:
            raise ProviderError("prompt is too long: 9000 tokens > 8192 maximum")
        except ProviderError as inner:
            raise RuntimeError("model call failed") from inner
    except RuntimeError as outer:
        assert is_context_overflow(outer)


@pytest.mark.parametrize(
    "error",
    [
        ProviderError("Rate limit reached for gpt-4o on tokens per min (TPM)", status_code=429),
        ProviderError("Incorrect API key provided", status_code=401),
        RuntimeError("connection reset by peer"),
        ValueError("invalid tool call arguments"),
    ],
)
def test_other_errors_are_not_overflows(error: Exception) -> None:
    assert not is_context_overflow(error)


def config() -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": 20_000,
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": "extractive",
                    "tool_result_pruning_config": {
                        "pruning_recent_msg_max_bytes": 6000,
                        "pruning_old_msg_max_bytes": 3000,
                    },
                },
            }
        }
    )


def build_log(target: str) -> str:
    """Ask for a build log.

    Args:
        target (`str`): What to build.
    """
    return lines_text(90, seed=f"build {target}")


def session_steps(*failures: Exception) -> list[Any]:
    steps: list[Any] = [tool_calls_step(("build_log", {"target": f"m{i}"})) for i in range(6)]
    return [*steps, *failures, text_step("all modules build")]


async def test_overflow_is_recovered_by_compacting_and_retrying_once(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(config(), tmp_path, on_event=events.append)
    error = ProviderError("prompt is too long: 30512 tokens > 20000 maximum")
    model = ScriptedChatModel(session_steps(error), context_size=20_000)
    agent = await make_agent(hook, model, [allow(build_log)])
    reply = await agent.reply(UserMsg("user", "build every module"))
    assert reply.get_text_content() == "all modules build"
    failed, retried = model.calls[-2], model.calls[-1]
    assert text_bytes(retried) < text_bytes(failed) / 2, "the retry must send much less"
    assert openai_pairing_problems(retried.formatted) == []
    assert [m.get_text_content() for m in retried.messages if m.role == "user"][-1] == (
        "build every module"
    ), "the latest request survives the recovery"
    kinds = [e.kind for e in events]
    assert "overflow_recovery" in kinds
    compaction = [e for e in events if e.kind == "compaction" and e.trigger == "overflow"]
    assert len(compaction) == 1 and compaction[0].messages_compacted > 0
    assert list((tmp_path / "dialog").glob("*.jsonl")), "what left the context was archived"


async def test_a_second_overflow_raises_the_original_error(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    hook = MemoryCompactionHook(config(), tmp_path, on_event=events.append)
    first = ProviderError("prompt is too long: 30512 tokens > 20000 maximum")
    second = ProviderError("prompt is too long: 20100 tokens > 20000 maximum")
    model = ScriptedChatModel(session_steps(first, second), context_size=20_000)
    agent = await make_agent(hook, model, [allow(build_log)])
    with pytest.raises(ProviderError) as raised:
        await agent.reply(UserMsg("user", "build every module"))
    assert raised.value is first
    recoveries = [e for e in events if e.kind == "overflow_recovery"]
    assert [e.message.split(":")[0] for e in recoveries] == [
        "compacted, retrying the call once",
        "retry failed",
    ]


async def test_other_model_errors_are_not_retried(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(), tmp_path)

    def fail(call: ModelCall) -> Any:
        raise ProviderError("Incorrect API key provided", status_code=401)

    model = ScriptedChatModel([fail, text_step("never")], context_size=20_000)
    agent = await make_agent(hook, model)
    with pytest.raises(ProviderError, match="API key"):
        await agent.reply(UserMsg("user", "hello"))
    assert len(model.calls) == 1 and model.remaining == 1


@pytest.mark.parametrize(
    ("message", "figures"),
    [
        (
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9120 tokens.",
            (9120, 8192),
        ),
        ("prompt is too long: 207605 tokens > 200000 maximum", (207605, 200000)),
        ("Range of input length should be [1, 30720]", (None, 30720)),
        ("Error code: 400 - context_length_exceeded", (None, None)),
        # Misreads and absurd figures are not read: an HTML page's "<title>413", no window
        # of 1 token or 10**12, a figure of more digits than int() may parse.
        ("<html><head><title>413 Request Entity Too Large</title></head></html>", (None, None)),
        ("prompt is too long: 3 tokens > 1 maximum", (None, None)),
        ("maximum context length is 16000 tokens, resulted in 1000000000000 tokens", (None, 16000)),
        (
            "maximum context length is 16000 tokens, resulted in " + "9" * 5000 + " tokens",
            (None, 16000),
        ),
    ],
)
def test_the_figures_of_an_overflow_error_are_read(
    message: str, figures: tuple[int | None, int | None]
) -> None:
    assert overflow_figures(ProviderError(message)) == figures


@pytest.mark.parametrize(
    "message",
    [
        "Rate limit reached: input tokens exceed 30000 per minute (TPM)",
        "Image payload too large",
        "quota exceeded: too many input tokens today",
    ],
)
def test_limits_that_compaction_cannot_fix_are_not_overflows(message: str) -> None:
    assert not is_context_overflow(ProviderError(message, status_code=429))


async def test_recovery_learns_how_far_off_the_count_is(tmp_path: Path) -> None:
    """A provider that counts 3x our estimate and reports no usage: after the first
    rejection the count is corrected, so later calls are not rejected again."""
    window = 6000
    rejected: list[int] = []

    def strict(call: ModelCall) -> Any:
        counted = int(text_bytes(call) / 4 * 3.0)
        if call.tools and counted > window:
            rejected.append(counted)
            raise ProviderError(
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {counted} tokens.",
                code="context_length_exceeded",
            )
        return policy(call)

    hook = MemoryCompactionHook(
        parse_running_config(
            {
                "running": {
                    "max_input_length": window,
                    "memory": {"enabled": False},  # its tools' schemas would crowd 6000 tokens
                    "light_context_config": {
                        "token_counter": "estimate",
                        "compactor": "extractive",
                        "tool_result_pruning_config": {
                            "pruning_recent_msg_max_bytes": 8000,
                            "pruning_old_msg_max_bytes": 1000,
                        },
                    },
                }
            }
        ),
        tmp_path,
    )
    policy = demo_policy(60, parallel_every=4)
    model = ScriptedChatModel([strict] * 400, context_size=window, usage=lambda call: (0, 0))
    agent = await make_agent(hook, model, make_demo_tools(seed=2))
    for turn in policy.user_turns():
        await agent.reply(UserMsg("user", turn))
    assert policy.done
    assert 1 <= len(rejected) <= 3, f"{len(rejected)} calls rejected"
    report = await hook.report(agent)
    assert report.calibration >= 2.5


async def test_an_overflow_at_the_start_of_a_stream_is_recovered(tmp_path: Path) -> None:
    """Some servers answer the request, then fail on the first chunk of the stream."""
    hook = MemoryCompactionHook(config(), tmp_path)
    error = ProviderError("prompt is too long: 30512 tokens > 20000 maximum")

    class FailingStream(ScriptedChatModel):
        raised = False

        async def _call_api(self, *args: Any, **kwargs: Any) -> Any:
            response = await super()._call_api(*args, **kwargs)
            if self.remaining == 1 and not FailingStream.raised:
                FailingStream.raised = True

                async def broken() -> Any:
                    raise error
                    yield response  # pragma: no cover - makes this an async generator

                return broken()
            return response

    model = FailingStream(session_steps(text_step("unused")), stream=True, context_size=20_000)
    agent = await make_agent(hook, model, [allow(build_log)])
    reply = await agent.reply(UserMsg("user", "build every module"))
    assert reply.get_text_content() == "all modules build"
    assert FailingStream.raised


def test_a_window_beyond_any_model_is_refused() -> None:
    with pytest.raises(ConfigError, match="max_input_length"):
        parse_running_config({"running": {"max_input_length": 1e300}})
