"""The 1.x model call as the hook sees it: usage calibration and overflow recovery.

1.x has no hook around the model call, so the agent's model is wrapped
(:class:`~copaw_context.agentscope1.proxies.ContextModelProxy`) and every call comes here.
Only the reasoning call is ours: ``pre_reasoning`` leaves its measure in the agent's scratch
and the next call takes it; other calls (query rewriting, the summary after ``max_iters``)
pass through untouched. When the provider says the input is too long, the context is
compacted harder and the prompt is formatted again from the memory, as ``_reasoning`` does,
then the call is retried once.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from agentscope.message import Msg

from copaw_context.core.engine import InputMeasure
from copaw_context.core.overflow import started_stream
from copaw_context.core.tokens.usage import ReportedUsage

if TYPE_CHECKING:
    from copaw_context.agentscope1.hook_protocol import As1Hook

__all__ = ["call_model", "reported_input_tokens"]

logger = logging.getLogger("copaw_context")


def reported_input_tokens(usage: Any, model: Any) -> int | None:
    """The prompt size a 1.x ``ChatUsage`` states, or None when it cannot be a full count.

    1.x drops the cache figures; its Anthropic model reports ``input_tokens`` without the
    cached share (Anthropic counts it apart), so that figure is no full count.
    """
    if usage is None:
        return None
    anthropic = any(c.__name__.startswith("Anthropic") for c in type(model).__mro__)
    value = getattr(usage, "input_tokens", None)
    return ReportedUsage(
        input_tokens=value if isinstance(value, int) else None,
        cache_read_tokens=None,
        cache_write_tokens=None,
        cache_apart=anthropic,
    ).prompt_tokens()


async def call_model(
    hook: As1Hook, agent: Any, inner: Any, args: tuple[Any, ...], kwargs: Any
) -> Any:
    """Call ``inner`` for ``agent``; for the reasoning call, observe and recover."""
    measure = hook.scratch(agent).pop("measure", None)
    if not isinstance(measure, InputMeasure) or not hook.is_light:
        return await inner(*args, **kwargs)
    session = await hook.session(agent)

    async def resend() -> Any:
        nonlocal measure
        await session.flush()
        prompt = await agent.formatter.format(
            [Msg("system", agent.sys_prompt, "system"), *await agent.memory.get_memory()]
        )
        measure = await _measure(hook, agent)
        again = ((prompt, *args[1:]), kwargs) if args else (args, {**kwargs, "messages": prompt})
        return await started_stream(await inner(*again[0], **again[1]))

    try:
        response = await hook.engine.guarded_call(
            session, lambda: _send(inner, args, kwargs), resend
        )
    finally:
        await session.flush()  # a recovery that failed half-way may have changed the summary
    if isinstance(response, AsyncIterator):
        return _observed_stream(hook, agent, inner, measure, response)
    await _observe(hook, agent, inner, measure, response)
    return response


async def _measure(hook: As1Hook, agent: Any) -> InputMeasure | None:
    try:
        return await hook.engine.model_call(await hook.session(agent))
    except Exception:
        logger.exception("copaw-context: could not measure the model input")
        return None


async def _send(inner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return await started_stream(await inner(*args, **kwargs))


async def _observed_stream(
    hook: As1Hook,
    agent: Any,
    inner: Any,
    measure: InputMeasure | None,
    stream: Any,
) -> AsyncGenerator[Any, None]:
    last = None
    async for chunk in stream:
        last = chunk
        yield chunk
    if last is not None:
        await _observe(hook, agent, inner, measure, last)


async def _observe(
    hook: As1Hook,
    agent: Any,
    inner: Any,
    measure: InputMeasure | None,
    response: Any,
) -> None:
    reported = reported_input_tokens(getattr(response, "usage", None), inner)
    if measure is None or reported is None:
        return
    try:
        await hook.engine.observe_usage(await hook.session(agent), measure, reported)
    except Exception:
        logger.exception("copaw-context: could not use the reported usage")
