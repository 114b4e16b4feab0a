"""The 1.x model call as the hook sees it: usage calibration and overflow recovery.

1.x has no hook around the model call, so the agent's model is wrapped
(:class:`~copaw_context.agentscope1.proxies.ContextModelProxy`) and every call comes here.
Only the reasoning call is ours: ``pre_reasoning`` marks it in the agent's scratch
(``EngineHook.mark_reasoning``) and the next call takes it (``takes_call``); other calls
(query rewriting, the summary after ``max_iters``) pass through untouched. When the provider
says the input is too long, the context is compacted harder and the prompt is formatted
again from the memory, as ``_reasoning`` does, then the call is retried once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentscope.message import Msg

from copaw_context.core.host.models import reported_usage
from copaw_context.core.tokens.usage import ReportedUsage

if TYPE_CHECKING:
    from copaw_context.agentscope1.hook_protocol import As1Hook

__all__ = ["call_model"]


async def call_model(
    hook: As1Hook, agent: Any, inner: Any, args: tuple[Any, ...], kwargs: Any
) -> Any:
    """Call ``inner`` for ``agent``; the reasoning call (marked by the hook's
    ``pre_reasoning``) goes through the engine: measured, recovered once, observed."""
    if not hook.takes_call(agent):
        return await inner(*args, **kwargs)
    session = await hook.session(agent)

    async def send(call: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
        return await inner(*call[0], **call[1])

    async def rebuild() -> tuple[tuple[Any, ...], dict[str, Any]]:
        prompt = await agent.formatter.format(
            [Msg("system", agent.sys_prompt, "system"), *await agent.memory.get_memory()]
        )
        return ((prompt, *args[1:]), kwargs) if args else (args, {**kwargs, "messages": prompt})

    def usage(response: Any) -> ReportedUsage | None:
        return reported_usage(getattr(response, "usage", None), inner)

    return await hook.model_call(agent, session, (args, dict(kwargs)), send, rebuild, usage)
