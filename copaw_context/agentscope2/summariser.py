"""The compactor's model for AgentScope 2.x: a fresh tool-less ``Agent`` per request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agentscope.agent import Agent, InjectionConfig, ReActConfig
from agentscope.message import UserMsg
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase
from agentscope.tool import Toolkit

__all__ = ["AgentScopeSummariser"]


class _NoCompression(MiddlewareBase):
    """Keeps the compactor agent's own built-in compression out of the way."""

    async def on_compress_context(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Callable[..., Awaitable[None]]
    ) -> None:
        return None


class AgentScopeSummariser:
    """A :class:`~copaw_context.core.summary.llm.CompactorModel` over a ``ChatModelBase``."""

    def __init__(self, model: ChatModelBase, *, window: int | None = None) -> None:
        self.model = model
        self.window = window

    @property
    def context_size(self) -> int:
        """The model's ``context_size``, or the agent's configured window when smaller (the
        agent's own model serves that window, whatever its nominal size says)."""
        size = int(self.model.context_size)
        return size if self.window is None else min(size, self.window)

    async def complete(self, system_prompt: str, request: str) -> str:
        """The reply text of a one-step agent with no tools and no injected state."""
        agent = Agent(
            name="copaw_compactor",
            system_prompt=system_prompt,
            model=self.model,
            toolkit=Toolkit(),
            middlewares=[_NoCompression()],
            injection_config=InjectionConfig(inject_runtime_state=False),
            # A timeout cancels the reply; without this the agent would swallow the
            # cancellation and return its "interrupted" message as if it were a summary.
            react_config=ReActConfig(max_iters=1, interruption_raise_cancelled_error=True),
        )
        reply = await agent.reply(UserMsg(name="user", content=request))
        return reply.get_text_content() or ""
