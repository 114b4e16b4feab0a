"""The compactor's model for AgentScope 1.x: one formatted request to a ``ChatModelBase``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agentscope.message import Msg

from copaw_context.core.host.models import compactor_context_size

__all__ = ["AgentScope1Summariser", "response_text"]


def response_text(response: Any) -> str:
    """The text blocks of a 1.x ``ChatResponse``."""
    blocks = getattr(response, "content", None) or []
    return "".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    )


class AgentScope1Summariser:
    """A :class:`~copaw_context.core.summary.llm.CompactorModel` (and memory model) over a
    1.x ``ChatModelBase`` and its formatter."""

    def __init__(self, model: Any, formatter: Any, *, window: int | None = None) -> None:
        self.model = model
        self.formatter = formatter
        self.window = window

    @property
    def context_size(self) -> int:
        """The model's ``context_size`` if it states one, capped by the agent's window when it
        is the agent's own model; else that window (or QwenPaw's 131072)."""
        return compactor_context_size(getattr(self.model, "context_size", None), self.window)

    async def complete(self, system_prompt: str, request: str) -> str:
        """The reply text to ``request`` under ``system_prompt`` (no tools)."""
        prompt = await self.formatter.format(
            [Msg("system", system_prompt, "system"), Msg("user", request, "user")]
        )
        response = await self.model(prompt)
        last = response
        if isinstance(response, AsyncIterator):
            async for chunk in response:  # 1.x chunks accumulate: the last holds it all
                last = chunk
        return response_text(last)
