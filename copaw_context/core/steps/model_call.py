"""The model call as every host makes it: measure, send, recover once, learn from usage.

An adapter hands over its input and three callables (how to send an input, how to rebuild
the input once the context changed, how to read a response's usage); the rest is policy and
lives here: a failure to measure or observe never fails the call (logged), an "input too
long" error is recovered from once (``recover.py``), a streamed response is observed after
its last chunk, and one rule (``core.tokens.usage``) decides whether the reported figures are
a full prompt count.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from copaw_context.core.context.step_context import StepContext
from copaw_context.core.events import ContextEvent
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.steps.measure import InputMeasure, InputMeter
from copaw_context.core.steps.overflow import started_stream
from copaw_context.core.steps.recover import OverflowRecovery
from copaw_context.core.tokens.usage import ReportedUsage
from copaw_context.core.workspace import durable

__all__ = ["ModelCaller", "UsageReader", "call_event"]

logger = logging.getLogger("copaw_context")

_I = TypeVar("_I")

UsageReader = Callable[[Any], ReportedUsage | None]
"""A response (or a stream's last chunk) -> its usage in neutral fields (None: not reported)."""


def call_event(host: HostSession, measure: InputMeasure) -> ContextEvent:
    """The ``model_call`` event of a measured input: its tokens and prompt-cache figure."""
    reuse = measure.reuse
    return ContextEvent(
        kind="model_call",
        agent_name=host.agent_name,
        session_id=host.session_id,
        tokens_before=measure.tokens,
        tokens_after=measure.tokens,
        prefix_reused_tokens=0 if reuse is None else reuse.reused_tokens,
        session_reused_share=0.0 if reuse is None else reuse.session_share,
    )


class ModelCaller:
    """One guarded, measured model call."""

    def __init__(self, ctx: StepContext, meter: InputMeter, recovery: OverflowRecovery) -> None:
        self.ctx, self.meter, self.recovery = ctx, meter, recovery

    async def call(
        self,
        host: HostSession,
        model_input: _I,
        send: Callable[[_I], Awaitable[Any]],
        rebuild: Callable[[], Awaitable[_I]],
        usage: UsageReader,
        *,
        calibrate: bool = True,
    ) -> Any:
        """``send(model_input)``, measured first; on "input too long", compact harder and send
        ``await rebuild()`` once; the response (a stream: the same stream) comes back."""
        if not self.ctx.is_light:
            response = await send(model_input)
            await self.ctx.store.settle()
            await durable.durable()
            return response
        measure = await self._measure(host, model_input)

        async def first() -> Any:
            return await started_stream(await send(model_input))

        async def again() -> Any:
            nonlocal measure
            fresh = await rebuild()
            measure = await self._measure(host, fresh)
            return await started_stream(await send(fresh))

        response = await self.recovery.call(host, first, again)
        # The outputs saved before this call are on disk before the reply can end (a host
        # saves its state, which names them, after it): synced while the model answered;
        # so is the session's offload manifest, written in the background.
        await self.ctx.store.settle()
        await durable.durable()
        if not calibrate:
            return response
        if isinstance(response, AsyncIterator):
            return self._observed(host, measure, response, usage)
        await self._observe(host, measure, response, usage)
        return response

    async def _measure(self, host: HostSession, model_input: object) -> InputMeasure | None:
        host.use_model_input(model_input)
        try:
            measure = await self.meter.measure(host)
        except Exception:
            logger.exception("copaw-context: could not measure the model input")
            return None
        finally:
            host.use_model_input(None)
        if measure.reuse is not None:
            await self.ctx.emit(call_event(host, measure))
        return measure

    async def _observed(
        self,
        host: HostSession,
        measure: InputMeasure | None,
        stream: AsyncIterator[Any],
        usage: UsageReader,
    ) -> AsyncGenerator[Any, None]:
        last = None
        async for chunk in stream:
            last = chunk
            yield chunk
        if last is not None:
            await self._observe(host, measure, last, usage)

    async def _observe(
        self, host: HostSession, measure: InputMeasure | None, response: Any, usage: UsageReader
    ) -> None:
        if measure is None:
            return
        try:
            reported = usage(response)
            tokens = reported.prompt_tokens() if reported is not None else None
            if tokens is not None:
                await self.meter.observe_usage(host, measure, tokens)
        except Exception:
            logger.exception("copaw-context: could not use the reported usage")
