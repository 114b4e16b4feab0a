"""The host-neutral LLM compactor, driven by a plain CompactorModel (no AgentScope)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from copaw_context.core.summary import CompactorModel, Summary, SummaryCompactor, llm
from copaw_context.core.summary.prompts import CONVERSATION_OPEN
from copaw_context.core.tokens import make_token_counter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ScriptedTextModel
from tests.helpers import six_section_summary
from tests.summaries import PREVIOUS_SUMMARY


def _compactor(**options: Any) -> SummaryCompactor:
    settings: dict[str, Any] = {"mode": "llm", "counter": make_token_counter("estimate")}
    # A timeout here is the whole call's, as before it grew with the call's size.
    settings["reference_tokens"] = 10**9
    return SummaryCompactor(**{**settings, "retry_delay": 0.001, **options})


def _messages(turns: int = 2, size: int = 20) -> list[TranscriptMessage]:
    out: list[TranscriptMessage] = []
    for t in range(turns):
        text = f"Request {t}: never touch prod.yaml. " + "detail " * size
        out.append(TranscriptMessage("user", "user", (TranscriptPart("text", text),)))
        out.append(TranscriptMessage("assistant", "bot", (TranscriptPart("text", f"ok {t}"),)))
    return out


def test_the_fake_is_a_compactor_model() -> None:
    model: CompactorModel = ScriptedTextModel([])
    assert model.context_size == 32768


async def test_a_valid_reply_is_used_with_the_previous_items_and_the_facts() -> None:
    model = ScriptedTextModel(
        [PREVIOUS_SUMMARY.replace("- Never modify vendor/ files", "- (none)")]
    )
    result = await _compactor().summarise(
        _messages(), previous=Summary.parse(PREVIOUS_SUMMARY), model=model
    )
    assert (result.method, result.fallback_reason, result.stages) == ("llm", None, 1)
    assert "- Never modify vendor/ files" in result.text  # kept from the previous summary
    assert "Request 0: never touch prod.yaml." in result.text  # carried verbatim
    (call,) = model.calls
    assert "checkpoint summaries" in call.system_prompt and CONVERSATION_OPEN in call.request


async def test_an_unchanged_reply_is_returned_as_written() -> None:
    # A reply every rule allows: its constraint is the user's, its decision was taken with
    # a reason in the conversation (see tests/core/summary/test_summary_rules.py).
    decision = "I will keep the public API unchanged because clients pin it."
    reply = PREVIOUS_SUMMARY.replace("Keep the public API unchanged", decision)
    model = ScriptedTextModel([f"  {reply}\n"])
    messages = [
        TranscriptMessage("user", "user", (TranscriptPart("text", "Never modify vendor/ files"),)),
        TranscriptMessage("assistant", "bot", (TranscriptPart("text", decision),)),
    ]
    result = await _compactor().summarise(messages, previous=None, model=model)
    assert result.text == reply and result.dropped_lines == 0


async def test_errors_are_retried_with_a_doubling_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    sleep = asyncio.sleep

    async def record(seconds: float) -> None:
        pauses.append(seconds)
        await sleep(0)

    monkeypatch.setattr(llm.asyncio, "sleep", record)
    model = ScriptedTextModel([RuntimeError("500"), ConnectionError("reset"), PREVIOUS_SUMMARY])
    compactor = _compactor(retries=2, retry_delay=0.25)
    result = await compactor.summarise(_messages(), previous=None, model=model)
    assert result.method == "llm" and len(model.requests) == 3
    assert pauses == [0.25, 0.5]


async def test_every_attempt_failing_falls_back_to_the_extractive_summary() -> None:
    model = ScriptedTextModel([RuntimeError(f"500 #{i}") for i in range(3)])
    result = await _compactor(retries=2).summarise(
        _messages(), previous=Summary.parse(PREVIOUS_SUMMARY), model=model
    )
    assert result.method == "extractive" and result.fallback_reason == "RuntimeError: 500 #2"
    assert "Ship the parser fix for ticket PARSE-17" in result.text
    assert "Request 1: never touch prod.yaml." in result.text


async def test_a_timeout_is_a_failed_call() -> None:
    async def hang(_request: str) -> str:
        await asyncio.Event().wait()
        return "never"

    model = ScriptedTextModel([hang, PREVIOUS_SUMMARY])
    result = await _compactor(timeout_seconds=0.01, retries=1).summarise(
        _messages(), previous=None, model=model
    )
    assert result.method == "llm" and len(model.requests) == 2
    model = ScriptedTextModel([hang])
    result = await _compactor(timeout_seconds=0.01, retries=0).summarise(
        _messages(), previous=None, model=model
    )
    assert result.fallback_reason == "compactor timed out after 0.01 s"


async def test_a_cancelled_error_from_the_model_is_a_failed_call() -> None:
    model = ScriptedTextModel([asyncio.CancelledError(), PREVIOUS_SUMMARY])
    result = await _compactor(retries=1).summarise(_messages(), previous=None, model=model)
    assert result.method == "llm" and len(model.requests) == 2
    model = ScriptedTextModel([asyncio.CancelledError()])
    result = await _compactor(retries=0).summarise(_messages(), previous=None, model=model)
    assert result.method == "extractive" and "cancelled" in (result.fallback_reason or "")


async def test_cancelling_the_callers_task_stops_the_compactor() -> None:
    started = asyncio.Event()

    async def hang(_request: str) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedTextModel([hang, PREVIOUS_SUMMARY])
    task = asyncio.create_task(
        _compactor(retries=1).summarise(_messages(), previous=None, model=model)
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(model.requests) == 1, "a cancelled caller must not retry"


async def test_an_oversized_reply_is_asked_again_with_the_size_then_replaced() -> None:
    big = six_section_summary(200)
    model = ScriptedTextModel([big, PREVIOUS_SUMMARY])
    result = await _compactor(max_summary_chars=2000, adaptive_budget=False).summarise(
        _messages(), previous=None, model=model
    )
    assert result.method == "llm"
    first, second = model.requests
    assert "at most 2000 characters" in first
    assert f"Your previous answer was {len(big)} characters" in second
    model = ScriptedTextModel([big, big])
    result = await _compactor(max_summary_chars=2000).summarise(
        _messages(), previous=None, model=model
    )
    assert result.method == "extractive" and len(result.text) <= 2000
    assert result.fallback_reason == (f"summary too long: {len(big)} characters, the limit is 2000")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty summary"),
        ("## Hello\nHow can I help?", "missing sections: ## Goal"),
        (f"{CONVERSATION_OPEN}\n{PREVIOUS_SUMMARY}", "repeats the request delimiter"),
    ],
)
async def test_an_invalid_reply_falls_back(reply: str, reason: str) -> None:
    model = ScriptedTextModel([reply, reply])
    result = await _compactor().summarise(
        _messages(), previous=Summary.parse(PREVIOUS_SUMMARY), model=model
    )
    assert result.method == "extractive" and reason in (result.fallback_reason or "")


@pytest.mark.parametrize(("context_size", "window"), [(1500, None), (32768, 1500)])
async def test_stages_fit_the_smaller_of_the_model_and_the_given_window(
    context_size: int, window: int | None
) -> None:
    counter = make_token_counter("estimate")
    model = ScriptedTextModel([PREVIOUS_SUMMARY] * 30, context_size=context_size)
    compactor = _compactor(counter=counter)
    result = await compactor.summarise(
        _messages(turns=12, size=80),
        previous=Summary.parse(PREVIOUS_SUMMARY),
        model=model,
        window_tokens=window,
    )
    assert result.method == "llm" and result.stages == len(model.requests) >= 2
    assert all(counter.count(call.system_prompt + call.request) < 1500 for call in model.calls)


async def test_no_model_or_the_extractive_mode_calls_nothing() -> None:
    model = ScriptedTextModel([])
    for compactor, given in ((_compactor(), None), (_compactor(mode="extractive"), model)):
        result = await compactor.summarise(_messages(), previous=None, model=given)
        assert result.method == "extractive" and result.fallback_reason is None
    assert model.requests == []


async def test_the_cpu_bound_steps_run_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: dict[str, threading.Thread] = {}

    def spy(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            threads[name] = threading.current_thread()
            return function(*args, **kwargs)

        return wrapper

    for name in ("extract_facts", "extractive", "fit_to_budget", "render_transcript"):
        monkeypatch.setattr(llm, name, spy(name, getattr(llm, name)))
    model = ScriptedTextModel([RuntimeError("500"), PREVIOUS_SUMMARY])
    await _compactor(retries=0).summarise(_messages(), previous=None, model=model)
    await _compactor(retries=0).summarise(_messages(), previous=None, model=model)
    assert set(threads) == {
        "extract_facts",
        "extractive",
        "fit_to_budget",
        "render_transcript",
    }
    assert threading.main_thread() not in threads.values()


@pytest.mark.parametrize("counter_name", ["estimate", "o200k_base"])
@pytest.mark.parametrize("window", [3000, 8000, 16000])
async def test_no_compactor_request_exceeds_its_window(counter_name: str, window: int) -> None:
    """Dense CJK and English parts are shortened by their own tokens-per-character, and the
    request's instructions and carried summary are counted: each stage fits the window."""
    counter = make_token_counter(counter_name)
    cjk = "数据库迁移失败，回滚到上一版本并记录错误。" * 900
    english = "error: build failed at step " * 1200
    messages = [
        TranscriptMessage("user", "user", (TranscriptPart("text", "Fix the build. " + cjk),)),
        TranscriptMessage(
            "assistant",
            "bot",
            (
                TranscriptPart("tool_call", '{"cmd": "make"}', "shell", "c1"),
                TranscriptPart("tool_result", english + cjk, "shell", "c1"),
            ),
        ),
    ]
    budget = max(2000, min(16000, int(window * 0.08 * 3)))
    model = ScriptedTextModel([six_section_summary(3)] * 20, context_size=window)
    compactor = _compactor(counter=counter, max_summary_chars=budget)
    result = await compactor.summarise(
        messages, previous=Summary.parse(PREVIOUS_SUMMARY), model=model
    )
    assert result.method == "llm"
    for call in model.calls:
        sent = counter.count(call.system_prompt) + counter.count(call.request)
        assert sent <= window, f"a {sent}-token request for a {window}-token compactor"


async def test_the_result_says_why_each_call_was_made() -> None:
    big = six_section_summary(200)
    model = ScriptedTextModel([big, PREVIOUS_SUMMARY])
    result = await _compactor(max_summary_chars=2000, adaptive_budget=False).summarise(
        _messages(), previous=None, model=model
    )
    assert len(result.calls) == len(model.requests) == 2
    assert result.calls[0].startswith("stage 1: ")
    assert result.calls[1] == f"retry: summary too long: {len(big)} characters, the limit is 2000"
    counter = make_token_counter("estimate")
    model = ScriptedTextModel([PREVIOUS_SUMMARY] * 30, context_size=1500)
    result = await _compactor(counter=counter).summarise(
        _messages(turns=12, size=80), previous=None, model=model
    )
    assert len(result.calls) == len(model.requests) == result.stages >= 2
    assert [why.split(":")[0] for why in result.calls] == [
        f"stage {n}" for n in range(1, result.stages + 1)
    ]
    assert not (await _compactor().summarise(_messages(), model=None)).calls
