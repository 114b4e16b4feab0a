"""A scripted host-neutral text model (the shape of the compactor's and memory's model).

:class:`ScriptedTextModel` answers ``complete(system_prompt, request)`` from a list of answers
(a text, an exception instance that is raised, or a callable of the request), records every
call with its size in tokens counted by a real tokenizer, and, like a provider, rejects a
request larger than its ``context_size`` with :class:`ContextWindowExceededError` (the call is
recorded, nothing is consumed from the script).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from copaw_context.core.tokens import TiktokenCounter, TokenCounter

__all__ = ["ContextWindowExceededError", "ScriptedTextModel", "TextCall"]

Answer = str | BaseException | Callable[[str], str]


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


class ScriptedTextModel:
    """Answers from a list; records calls; rejects requests over ``context_size`` tokens."""

    def __init__(
        self,
        answers: list[Answer] | None = None,
        *,
        context_size: int = 32768,
        counter: TokenCounter | None = None,
        default: Answer | None = None,
    ) -> None:
        self.answers = list(answers or [])
        self.context_size = context_size
        self.counter = counter or TiktokenCounter("o200k_base")
        self.default = default
        self.calls: list[TextCall] = []

    async def complete(self, system_prompt: str, request: str) -> str:
        """The next answer, or :class:`ContextWindowExceededError` for an oversized request."""
        tokens = self.counter.count(system_prompt) + self.counter.count(request)
        rejected = tokens > self.context_size
        self.calls.append(TextCall(system_prompt, request, tokens, rejected))
        if rejected:
            raise ContextWindowExceededError(
                f"This model's maximum context length is {self.context_size} tokens. However, "
                f"your messages resulted in {tokens} tokens."
            )
        if self.answers:
            answer = self.answers.pop(0)
        elif self.default is not None:
            answer = self.default
        else:
            raise AssertionError("ScriptedTextModel: no answer left")
        if isinstance(answer, BaseException):
            raise answer
        return answer(request) if callable(answer) else answer
