"""Reactive overflow recovery: the provider rejected the input as too long.

The engine learns how far off its count was (the provider's own figure when the error gives
one, else at least the window), compacts down to half the reserve, and the call is made once
more with a rebuilt input. A second failure raises the first error. An event says what
happened either way.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from copaw_context.core.compaction import compact
from copaw_context.core.events import ContextEvent
from copaw_context.core.host import HostSession
from copaw_context.core.overflow import is_context_overflow, overflow_figures

if TYPE_CHECKING:
    from copaw_context.core.engine import ContextEngine

__all__ = ["guarded_call", "learn_from_overflow", "overflow_event", "recover_overflow"]

logger = logging.getLogger("copaw_context")

_T = TypeVar("_T")
_MAX_OVERFLOW_FACTOR = 8.0


async def guarded_call(
    engine: ContextEngine,
    host: HostSession,
    send: Callable[[], Awaitable[_T]],
    resend: Callable[[], Awaitable[_T]],
) -> _T:
    """``send()``; on an "input too long" error recover and ``resend()`` once."""
    try:
        return await send()
    except Exception as exc:
        if not (engine.is_light and is_context_overflow(exc)):
            raise
        try:
            await recover_overflow(engine, host, exc)
        except Exception as failure:
            logger.exception("copaw-context: overflow recovery failed")
            await overflow_event(engine, host, "recovery failed", failure)
            raise exc from failure
        await overflow_event(engine, host, "compacted, retrying the call once", exc)
        try:
            return await resend()
        except Exception as again:
            await overflow_event(engine, host, "retry failed", again)
            raise exc from again


async def recover_overflow(
    engine: ContextEngine, host: HostSession, error: BaseException
) -> ContextEvent | None:
    """Learn how far off our count was, then compact down to half the reserve."""
    logger.warning(
        "copaw-context: the model rejected the input as too long (%s); compacting harder "
        "and retrying once",
        error,
    )
    learn_from_overflow(engine, host, error)
    return await compact(engine, host, trigger="overflow")


def learn_from_overflow(engine: ContextEngine, host: HostSession, error: BaseException) -> None:
    """Raise the overflow factor so that the input just rejected counts as over the window.

    The provider's own figure ("resulted in N tokens", "N tokens > M maximum") is used when
    the error gives one; otherwise the input must have been over the window at least.
    """
    state = engine.state(host)
    sent = state.last_prompt_tokens
    if sent <= 0:
        return
    reported, limit = overflow_figures(error)
    window = limit or host.window().tokens
    needed = reported / sent if reported else window / sent * 1.05
    current = max(state.overflow_factor, state.calibration.factor)
    learned = min(_MAX_OVERFLOW_FACTOR, max(needed, current * 1.05))
    if learned > state.overflow_factor:
        state.overflow_factor = learned


async def overflow_event(
    engine: ContextEngine, host: HostSession, outcome: str, error: BaseException
) -> None:
    """Say what overflow recovery did (compacted and retrying, or failed)."""
    await engine.emit(
        ContextEvent(
            kind="overflow_recovery",
            agent_name=host.agent_name,
            session_id=host.session_id,
            trigger="overflow",
            message=f"{outcome}: {type(error).__name__}: {str(error)[:300]}",
        ),
        host,
    )
