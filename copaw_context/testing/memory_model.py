"""A scripted host-neutral text model: the one test double of the compactor's and memory's model.

The compactor and the memory pieces talk to a model of one shape: ``async complete(system_prompt,
request) -> str`` and an optional ``context_size``. :class:`ScriptedTextModel` plays that role
offline. It answers each call with the next of its ``answers`` (then ``default``):

- a text, returned;
- an exception instance, raised;
- a callable of the request, sync or async (``lambda request: ...`` or an ``async def``); a
  callable that takes an ``on_progress`` keyword also gets the call's progress callback (see
  ``reports_progress``).

Every call is recorded as a :class:`TextCall` with its size in tokens counted by a real
tokenizer; like a provider, the model rejects a request larger than its ``context_size`` with
:class:`ContextWindowExceededError` (the call is recorded, nothing is consumed from the script).
``gate`` holds every call until the event is set, ``active`` / ``most_active`` count the calls in
flight, ``called`` is set by the first call: enough to test concurrency and cancellation without
sleeping.
"""

from __future__ import annotations

import asyncio
import inspect
import types
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeAlias

from copaw_context.core.tokens import TiktokenCounter, TokenCounter

__all__ = [
    "Answer",
    "ContextWindowExceededError",
    "ProgressCallback",
    "ScriptedTextModel",
    "TextCall",
]

ProgressCallback: TypeAlias = Callable[[int], None]
"""Called with the characters received so far (the shape of the compactor's ``on_progress``)."""

Answer: TypeAlias = str | BaseException | Callable[..., str | Awaitable[str]]
"""A text, an exception instance (raised) or a callable of the request (sync or async)."""


class ContextWindowExceededError(Exception):
    """The request is longer than the model's window (the provider's 400)."""


@dataclass(frozen=True)
class TextCall:
    """One call: what was sent, its tokens (system prompt and request) and whether it was
    rejected as over the window."""

    system_prompt: str
    request: str
    tokens: int
    rejected: bool


@types.coroutine
def _yield_once() -> Generator[None, None, None]:
    """``asyncio.sleep(0)`` without calling ``asyncio.sleep`` (which tests may patch to
    record the compactor's pauses)."""
    yield


def _takes_progress(answer: Callable[..., Any]) -> bool:
    try:
        return "on_progress" in inspect.signature(answer).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


class ScriptedTextModel:
    """Answers from a list (then ``default``); records calls; rejects requests over
    ``context_size`` tokens.

    :param answers: consumed one per accepted call (see the module docstring for the kinds).
    :param context_size: the window in tokens; ``None`` for a model that states none (then
        nothing is rejected and callers see ``context_size is None``).
    :param counter: counts the tokens of a call (``o200k_base`` by default).
    :param default: the answer once ``answers`` is empty (not consumed); without one an
        exhausted script raises ``AssertionError``.
    :param gate: when given, every accepted call waits for this event before answering.
    :param reports_progress: what the model says to the compactor's progress protocol: when
        true the caller passes ``on_progress`` and callables that take it receive it.
    """

    def __init__(
        self,
        answers: list[Answer] | None = None,
        *,
        context_size: int | None = 32768,
        counter: TokenCounter | None = None,
        default: Answer | None = None,
        gate: asyncio.Event | None = None,
        reports_progress: bool = False,
    ) -> None:
        self.answers: list[Answer] = list(answers or [])
        self.context_size = context_size
        self.counter = counter or TiktokenCounter("o200k_base")
        self.default = default
        self.gate = gate
        self.reports_progress = reports_progress
        self.calls: list[TextCall] = []
        self.active = 0
        """Calls in flight (accepted, not yet answered)."""
        self.most_active = 0
        """The largest ``active`` seen."""
        self.called = asyncio.Event()
        """Set by the first call (rejected or not)."""

    @property
    def requests(self) -> list[str]:
        """The request texts of every call, in order (rejected ones included)."""
        return [call.request for call in self.calls]

    async def complete(
        self, system_prompt: str, request: str, *, on_progress: ProgressCallback | None = None
    ) -> str:
        """The next answer, or :class:`ContextWindowExceededError` for an oversized request."""
        tokens = self.counter.count(system_prompt) + self.counter.count(request)
        rejected = self.context_size is not None and tokens > self.context_size
        self.calls.append(TextCall(system_prompt, request, tokens, rejected))
        self.called.set()
        if rejected:
            raise ContextWindowExceededError(
                f"This model's maximum context length is {self.context_size} tokens. However, "
                f"your messages resulted in {tokens} tokens."
            )
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            if self.gate is not None:
                await self.gate.wait()
            await _yield_once()  # a real model yields: let other tasks run
            return await self._answer(self._next(), request, on_progress)
        finally:
            self.active -= 1

    def _next(self) -> Answer:
        if self.answers:
            return self.answers.pop(0)
        if self.default is not None:
            return self.default
        raise AssertionError("ScriptedTextModel: no answer left")

    @staticmethod
    async def _answer(answer: Answer, request: str, on_progress: ProgressCallback | None) -> str:
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            if _takes_progress(answer):
                result = answer(request, on_progress=on_progress)
            else:
                result = answer(request)
            if inspect.isawaitable(result):
                result = await result
            if not isinstance(result, str):
                raise TypeError(f"ScriptedTextModel: an answer returned {type(result).__name__}")
            return result
        return answer
