"""A compactor model that answers each request with the next scripted reply."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

__all__ = ["FakeModel"]


Reply = str | BaseException | Callable[[], Awaitable[str]]


class FakeModel:
    """Answers each request with the next of ``replies``: a text, an exception to raise, or
    a coroutine function to await."""

    def __init__(self, replies: list[Reply], context_size: int = 32768) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[str, str]] = []
        self._context_size = context_size

    @property
    def context_size(self) -> int:
        return self._context_size

    async def complete(self, system_prompt: str, request: str) -> str:
        self.requests.append((system_prompt, request))
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            return await reply()
        return reply
