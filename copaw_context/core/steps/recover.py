"""Reactive overflow recovery: the provider rejected the input as too long.

The engine learns how far off its count was (only as far as the error's figures say; a
modest step when it gives none), compacts down to half the reserve, and the call is made once
more with a rebuilt input. A second failure raises the first error. An event says what
happened either way.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from copaw_context.core.context.state import MAX_SAVED_FACTOR
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.events import ContextEvent
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.steps.compact import compact
from copaw_context.core.steps.overflow import is_context_overflow, overflow_figures

__all__ = [
    "OverflowRecovery",
    "guarded_call",
    "learn_from_overflow",
    "overflow_event",
    "recover_overflow",
    "relax_overflow_factor",
]

logger = logging.getLogger("copaw_context")

_T = TypeVar("_T")
_MAX_OVERFLOW_FACTOR = MAX_SAVED_FACTOR
_GUESS_STEP = 1.25  # no figures in the error
_RELAX = 0.75  # the share of a guess a successful call keeps


class OverflowRecovery:
    """The model call, guarded: an "input too long" error is learnt from, the context
    compacted down to half the reserve, and the call made once more."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx

    async def call(
        self,
        host: HostSession,
        send: Callable[[], Awaitable[_T]],
        resend: Callable[[], Awaitable[_T]],
    ) -> _T:
        return await guarded_call(self.ctx, host, send, resend)


async def guarded_call(
    ctx: StepContext,
    host: HostSession,
    send: Callable[[], Awaitable[_T]],
    resend: Callable[[], Awaitable[_T]],
) -> _T:
    """``send()``; on an "input too long" error recover and ``resend()`` once."""
    try:
        response = await send()
    except Exception as exc:
        if not (ctx.is_light and is_context_overflow(exc)):
            raise
        try:
            await recover_overflow(ctx, host, exc)
        except Exception as failure:
            logger.exception("copaw-context: overflow recovery failed")
            await overflow_event(ctx, host, "recovery failed", failure)
            raise exc from failure
        await overflow_event(ctx, host, "compacted, retrying the call once", exc)
        try:
            return await resend()
        except Exception as again:
            await overflow_event(ctx, host, "retry failed", again)
            raise exc from again
    relax_overflow_factor(ctx, host)
    return response


async def recover_overflow(
    ctx: StepContext, host: HostSession, error: BaseException
) -> ContextEvent | None:
    """Learn how far off our count was, then compact down to half the reserve."""
    logger.warning(
        "copaw-context: the model rejected the input as too long (%s); compacting harder "
        "and retrying once",
        error,
    )
    learn_from_overflow(ctx, host, error)
    return await compact(ctx, host, trigger="overflow")


def learn_from_overflow(ctx: StepContext, host: HostSession, error: BaseException) -> None:
    """Set the overflow factor only as far as the evidence in ``error`` supports.

    The provider's input figure ("resulted in N tokens", "N in the messages") against our
    count of the input it rejected is its own count, as good as reported usage: it becomes
    the factor's floor (a limit below the window we assumed scales by window / limit). With
    no figures the step is a modest guess (x1.25): the input may have been rejected for the
    completion's share, not for a miscount. Successful calls take guesses back
    (:func:`relax_overflow_factor`); ``/clear`` and ``/new`` reset both.
    """
    state = ctx.state(host)
    sent = state.last_prompt_tokens
    if sent <= 0:
        return
    try:
        reported, limit = overflow_figures(error)
    except Exception:  # a misread never kills the reply: no figures, the modest guess
        logger.exception("copaw-context: could not read the overflow error's figures")
        reported, limit = None, None
    if reported is None and limit is None:
        state.overflow_factor = min(_MAX_OVERFLOW_FACTOR, state.overflow_factor * _GUESS_STEP)
        return
    evidence = reported / sent if reported else 1.0
    window = host.window().tokens
    if limit and limit < window:
        evidence = max(evidence, window / limit)
    evidence = min(_MAX_OVERFLOW_FACTOR, max(1.0, evidence))
    state.overflow_evidence = evidence
    state.overflow_factor = evidence


def relax_overflow_factor(ctx: StepContext, host: HostSession) -> None:
    """A call went through: a quarter of what guesses added above the evidence goes away."""
    state = ctx.state(host)
    floor = state.overflow_evidence
    excess = state.overflow_factor - floor
    if excess > 0:
        state.overflow_factor = floor + excess * _RELAX if excess * _RELAX >= 0.01 else floor


async def overflow_event(
    ctx: StepContext, host: HostSession, outcome: str, error: BaseException
) -> None:
    """Say what overflow recovery did (compacted and retrying, or failed)."""
    await ctx.emit(
        ContextEvent(
            kind="overflow_recovery",
            agent_name=host.agent_name,
            session_id=host.session_id,
            trigger="overflow",
            message=f"{outcome}: {type(error).__name__}: {str(error)[:300]}",
        ),
        host,
    )
