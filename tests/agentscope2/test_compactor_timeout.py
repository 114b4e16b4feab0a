"""The compactor's timeout follows progress: a slow model that streams is never cut off, a
hung one is; a model that reports nothing gets a deadline that grows with the request.

No test measures time: a fake clock drives the slow models, the hung ones get tiny timeouts
and the tests count calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from copaw_context.agentscope2.summariser import AgentScopeSummariser
from copaw_context.core.summary import SummaryCompactor
from copaw_context.core.summary.deadline import (
    DECODE_WEIGHT,
    CallTimeout,
    ProgressCallback,
    ReplyRunaway,
    call_timeout,
    watch_call,
)
from copaw_context.core.summary.llm import ProgressCompactorModel
from copaw_context.core.tokens import make_token_counter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import (
    Answer,
    ManualClock,
    ScriptedChatModel,
    ScriptedTextModel,
    text_step,
)
from tests.summaries import PREVIOUS_SUMMARY

Behaviour = Callable[[ProgressCallback | None], Awaitable[str]]


def streaming(behaviours: list[Behaviour], *, streams: bool = True) -> ScriptedTextModel:
    """A compactor model that reports progress (when ``streams``); each call runs the next
    behaviour with the call's ``on_progress``."""

    def answer(behaviour: Behaviour) -> Answer:
        async def run(request: str, *, on_progress: ProgressCallback | None = None) -> str:
            return await behaviour(on_progress)

        return run

    return ScriptedTextModel([answer(b) for b in behaviours], reports_progress=streams)


def slow(clock: ManualClock[float], step: float, chunks: int = 20) -> Behaviour:
    """Streams ``chunks`` pieces of a valid summary, ``step`` fake seconds apart."""

    async def run(on_progress: ProgressCallback | None) -> str:
        for n in range(chunks):
            clock.advance(step)
            if on_progress is not None:
                on_progress(n * 10)
            await asyncio.sleep(0)
        return PREVIOUS_SUMMARY

    return run


def hang(after_chars: int | None = None, gone: list[bool] | None = None) -> Behaviour:
    """Hangs for ever, after reporting ``after_chars`` characters if given."""

    async def run(on_progress: ProgressCallback | None) -> str:
        if after_chars is not None and on_progress is not None:
            on_progress(after_chars)
        try:
            await asyncio.Event().wait()
        finally:
            if gone is not None:
                gone.append(True)
        return "never"

    return run


def _messages() -> list[TranscriptMessage]:
    return [TranscriptMessage("user", "user", (TranscriptPart("text", "Fix the parser."),))]


def _compactor(**options: object) -> SummaryCompactor:
    return SummaryCompactor(
        mode="llm", counter=make_token_counter("estimate"), retry_delay=0.001, **options
    )  # type: ignore[arg-type]


def test_the_model_satisfies_the_progress_protocol() -> None:
    model: ProgressCompactorModel = streaming([])
    assert model.reports_progress


# --------------------------------------------------------------------------- deadlines


def test_the_timeout_grows_with_the_request_and_the_reply() -> None:
    small = call_timeout(120, 300, 100)
    assert (small.idle, small.first, small.total) == (120, 120, 120)
    large = call_timeout(120, 40_000, 2_000)
    assert large.idle == 120  # between two progress events: always the timeout
    assert large.first == 120 * 40_000 / 1000
    assert large.total == 120 * (40_000 + DECODE_WEIGHT * 2_000) / 1000
    assert call_timeout(120, 40_000, 0, reference_tokens=8000).first == 600
    with pytest.raises(ValueError, match="reference_tokens"):
        call_timeout(120, 1, 1, reference_tokens=0)


async def test_a_slow_model_that_keeps_streaming_is_never_cut_off() -> None:
    clock = ManualClock()
    model = streaming([slow(clock, step=90.0)])  # 20 chunks, 90 s apart: 1800 s in all
    result = await _compactor(timeout_seconds=100, clock=clock).summarise(
        _messages(), previous=None, model=model
    )
    assert (result.method, result.fallback_reason) == ("llm", None)
    assert clock.now == 1800 and len(model.requests) == 1


async def test_a_model_that_never_starts_is_cut_off_and_retried() -> None:
    model = streaming([hang(), hang()])
    result = await _compactor(timeout_seconds=0.01, retries=1).summarise(
        _messages(), previous=None, model=model
    )
    assert result.method == "extractive" and len(model.requests) == 2
    assert result.fallback_reason == "compactor timed out after 0.01 s without any progress"


async def test_a_model_that_stops_streaming_is_cut_off() -> None:
    gone: list[bool] = []
    model = streaming([hang(after_chars=120, gone=gone), slow(ManualClock(), 0.0, 2)])
    result = await _compactor(timeout_seconds=0.01, retries=1).summarise(
        _messages(), previous=None, model=model
    )
    assert result.method == "llm" and len(model.requests) == 2
    assert gone == [True]  # the hung call was cancelled, not left running
    model = streaming([hang(after_chars=120)])
    result = await _compactor(timeout_seconds=0.01, retries=0).summarise(
        _messages(), previous=None, model=model
    )
    assert result.fallback_reason == "compactor made no progress for 0.01 s (120 characters in)"


async def test_a_model_without_progress_reports_gets_the_whole_call_deadline() -> None:
    model = streaming([hang(after_chars=50)], streams=False)  # on_progress is not passed
    result = await _compactor(timeout_seconds=0.01, retries=0, reference_tokens=10**9).summarise(
        _messages(), previous=None, model=model
    )
    assert result.fallback_reason == "compactor timed out after 0.01 s"
    model = streaming([hang()], streams=False)
    result = await _compactor(timeout_seconds=0.001, retries=0).summarise(
        _messages(), previous=None, model=model
    )
    waited = float((result.fallback_reason or "").split(" after ")[1].split(" s")[0])
    assert waited > 0.001  # the request and the reply it asks for make the deadline longer


async def test_a_runaway_stream_is_stopped_and_asked_again_with_the_size() -> None:
    model = streaming([hang(after_chars=10**6), slow(ManualClock(), 0.0, 2)])
    result = await _compactor(retries=1, max_summary_chars=2000).summarise(
        _messages(), previous=None, model=model
    )
    assert result.method == "llm" and len(model.requests) == 2
    assert "Your previous answer was 1000000 characters" in model.requests[1]


async def test_watch_call_raises_for_a_runaway_and_cancels_with_its_caller() -> None:
    limits = CallTimeout(idle=60, first=60, total=60, max_reply_chars=10)
    with pytest.raises(ReplyRunaway, match="passed 11 characters"):
        await watch_call(hang(after_chars=11), limits, streams=True)
    gone: list[bool] = []
    started = asyncio.Event()

    async def run(on_progress: ProgressCallback | None) -> str:
        started.set()
        return await hang(gone=gone)(on_progress)

    task = asyncio.create_task(watch_call(run, limits, streams=True))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone == [True]


# --------------------------------------------------------------------------- AgentScope


async def test_the_agentscope_adapter_reports_streamed_chunks() -> None:
    streaming = AgentScopeSummariser(ScriptedChatModel([text_step("## Goal\nabc")], stream=True))
    seen: list[int] = []
    assert streaming.reports_progress
    reply = await streaming.complete("system", "request", on_progress=seen.append)
    assert reply == "## Goal\nabc"
    assert len(seen) >= 2 and seen == sorted(seen) and seen[-1] == len(reply)
    plain = AgentScopeSummariser(ScriptedChatModel([text_step("done")]))
    assert not plain.reports_progress
    assert await plain.complete("system", "request") == "done"
