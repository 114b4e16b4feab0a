"""The compactor's model for AgentScope 2.x: a tool-less ``Agent``, built once and reused for
each request of a compaction (a fresh context each time)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agentscope.agent import Agent, InjectionConfig, ReActConfig
from agentscope.event import TextBlockDeltaEvent, ThinkingBlockDeltaEvent
from agentscope.message import Msg, UserMsg
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase
from agentscope.tool import Toolkit

from copaw_context.core.host.compactor_pool import AgentPool, ProgressTally
from copaw_context.core.host.models import compactor_context_size
from copaw_context.core.summary.deadline import ProgressCallback

__all__ = ["AgentScopeSummariser"]


class _CompactorMiddleware(MiddlewareBase):
    """Gives the compactor agent each request's system prompt and keeps its own built-in
    compression out of the way."""

    def __init__(self) -> None:
        super().__init__()
        self.system_prompt = ""

    async def on_system_prompt(self, agent: Any, current_prompt: str) -> str:
        return self.system_prompt

    async def on_compress_context(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Callable[..., Awaitable[None]]
    ) -> None:
        return None


class AgentScopeSummariser:
    """A :class:`~copaw_context.core.summary.llm.ProgressCompactorModel` over a
    ``ChatModelBase``: a streaming model reports each text (or thinking) chunk as progress,
    so the compactor's timeout measures the wait between chunks, not the whole reply."""

    def __init__(self, model: ChatModelBase, *, window: int | None = None) -> None:
        self.model = model
        self.window = window
        self._agents = AgentPool(self._build)

    @property
    def agents_built(self) -> int:
        """How many compactor agents this model built (one, unless requests overlapped)."""
        return self._agents.built

    @property
    def context_size(self) -> int:
        """The model's ``context_size``, capped by the agent's window when it is the agent's
        own model (``core.host.models.compactor_context_size``, as on 1.x)."""
        return compactor_context_size(getattr(self.model, "context_size", None), self.window)

    @property
    def reports_progress(self) -> bool:
        """True for a streaming model: its chunks are reported to ``on_progress``."""
        return bool(getattr(self.model, "stream", False))

    async def complete(
        self, system_prompt: str, request: str, *, on_progress: ProgressCallback | None = None
    ) -> str:
        """The reply text of a one-step agent with no tools and no injected state; each
        streamed chunk calls ``on_progress`` with the characters received so far."""
        agent, middleware = self._agents.take()
        middleware.system_prompt = system_prompt
        agent.state.context, agent.state.summary = [], ""
        progress = ProgressTally(on_progress)
        final: Msg | None = None
        stream = agent.reply_stream(UserMsg(name="user", content=request), yield_final_msg=True)
        async for event in stream:
            if isinstance(event, Msg):
                final = event
            elif isinstance(event, TextBlockDeltaEvent | ThinkingBlockDeltaEvent):
                progress.add(getattr(event, "delta", ""))
        if final is None:
            raise RuntimeError("the compactor agent produced no final message")
        self._agents.give((agent, middleware))  # finished: reusable (``AgentPool``)
        return final.get_text_content() or ""

    def _build(self) -> tuple[Agent, _CompactorMiddleware]:
        middleware = _CompactorMiddleware()
        agent = Agent(
            name="copaw_compactor",
            system_prompt="",
            model=self.model,
            toolkit=Toolkit(),
            middlewares=[middleware],
            injection_config=InjectionConfig(inject_runtime_state=False),
            # A timeout cancels the reply; without this the agent would swallow the
            # cancellation and return its "interrupted" message as if it were a summary.
            react_config=ReActConfig(max_iters=1, interruption_raise_cancelled_error=True),
        )
        return agent, middleware
