"""Asking the compactor model for one stage's summary: the calls, the retries, the check.

A failed attempt (exception, timeout, empty, missing sections, too long) is retried up to
``retries`` times, after an exception with an exponential backoff, after a reply that was too
long with the size stated again (the budget's ``ask``); a reply is parsed once, by
:func:`~.validate.check_reply`, and the parse is what is returned. The call is bounded by
the progress-based timeout (:mod:`.deadline`), its reply by the budget's ``hard_limit``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from copaw_context.core.host.protocol import CompactorModel
from copaw_context.core.summary.budget import SummaryBudget
from copaw_context.core.summary.deadline import (
    REFERENCE_TOKENS,
    ProgressCallback,
    ReplyRunaway,
    call_timeout,
    watch_call,
)
from copaw_context.core.summary.language import Language
from copaw_context.core.summary.model import Summary
from copaw_context.core.summary.prompts import compactor_system_prompt, size_retry_note
from copaw_context.core.summary.validate import check_reply
from copaw_context.core.tokens import TokenCounter

__all__ = ["ProgressCompactorModel", "ReplyAsker", "SummaryRejected"]

logger = logging.getLogger("copaw_context")

_MAX_RETRY_DELAY = 4.0  # seconds: the backoff doubles from ``retry_delay`` up to this


class ProgressCompactorModel(CompactorModel, Protocol):
    """A compactor model that reports progress while it answers (optional).

    When ``reports_progress`` is true the compactor passes ``on_progress`` and the model
    calls it from the event loop as the reply arrives (each streamed chunk), with the number
    of characters received so far. The timeout then measures the wait between two calls
    (and, before the first, a wait that grows with the request), so a slow model that is
    making progress is never cut off and a hung one still is.
    """

    @property
    def reports_progress(self) -> bool:
        """Whether ``complete`` will call ``on_progress`` (e.g. only when streaming)."""
        ...

    async def complete(
        self, system_prompt: str, request: str, *, on_progress: ProgressCallback | None = None
    ) -> str:
        """The model's reply text; calls ``on_progress(chars)`` as it streams."""
        ...


class ReplyAsker:
    """Asks a compactor model for a summary, with the retries of one stage."""

    def __init__(
        self,
        *,
        counter: TokenCounter,
        language: Language = "en",
        timeout_seconds: float = 120.0,
        retries: int = 1,
        retry_delay: float = 0.5,
        reference_tokens: int = REFERENCE_TOKENS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.counter = counter
        self.language = language
        self.timeout_seconds = timeout_seconds
        self.retries = retries
        self.retry_delay = retry_delay
        self.reference_tokens = reference_tokens
        self.clock = clock

    def backoff_seconds(self, failures: int) -> float:
        """The pause after the ``failures``-th failed call (0-based): doubles, capped."""
        return float(min(_MAX_RETRY_DELAY, self.retry_delay * 2**failures))

    async def ask(
        self,
        model: CompactorModel,
        request: str,
        *,
        previous: Summary | None,
        budget: SummaryBudget,
        request_tokens: int | None = None,
        calls: list[str] | None = None,
        why: str = "",
    ) -> Summary:
        """The parsed reply to ``request``, retried as the class says; ``request_tokens``
        (system prompt and request, when the caller knows them) spares counting them for the
        call's timeout; ``calls`` gets why each call was made (``why``, then each retry's
        cause)."""
        last_reason = "no attempt"
        failures = 0  # calls that raised so far
        pause = 0.0
        prompt = request
        for _attempt in range(self.retries + 1):
            if pause:
                await asyncio.sleep(pause)
                pause = 0.0
            if calls is not None:
                calls.append((why or "a summary") if _attempt == 0 else f"retry: {last_reason}")
            try:
                text = await self._call(model, prompt, budget, request_tokens)
            except TimeoutError as exc:
                last_reason = str(exc) or f"compactor timed out after {self.timeout_seconds:g} s"
                continue
            except ReplyRunaway as exc:
                last_reason = f"summary too long: over {exc.chars} characters while streaming"
                note = size_retry_note(exc.chars, budget.ask, language=self.language)
                prompt = f"{request}\n\n{note}"
                continue
            except asyncio.CancelledError:
                if _turn_is_cancelled():
                    raise  # the user's turn is being cancelled: leave, apply nothing
                # Raised inside the model call (e.g. by its HTTP client): a failed call.
                last_reason = "the compactor call was cancelled (not by the user's turn)"
                logger.info("copaw-context: %s", last_reason)
                pause = self.backoff_seconds(failures)
                failures += 1
                continue
            except Exception as exc:  # a provider or connection error: retry after a pause
                last_reason = f"{type(exc).__name__}: {exc}"
                logger.info("copaw-context: compactor call failed (%s)", last_reason)
                pause = self.backoff_seconds(failures)
                failures += 1
                continue
            if len(text) > budget.cap:  # checked first: validating a megabyte is wasted work
                last_reason = f"summary too long: {len(text)} characters, the limit is {budget.cap}"
                note = size_retry_note(len(text), budget.ask, language=self.language)
                prompt = f"{request}\n\n{note}"
                continue
            summary, problem = check_reply(text, language=self.language, previous=previous)
            if summary is not None:
                return summary
            last_reason = f"invalid summary: {problem}"
        raise SummaryRejected(last_reason)

    async def _call(
        self,
        model: CompactorModel,
        request: str,
        budget: SummaryBudget,
        request_tokens: int | None = None,
    ) -> str:
        """One compactor call, bounded by the progress-based timeout (see :mod:`.deadline`)."""
        system_prompt = compactor_system_prompt(self.language)
        streams = bool(getattr(model, "reports_progress", False))
        if request_tokens is None:
            request_tokens = self.counter.count(system_prompt) + self.counter.count(request)
        limits = call_timeout(
            self.timeout_seconds,
            request_tokens,
            budget.ask // 2,  # about 2 characters a token, mixed text
            reference_tokens=self.reference_tokens,
            max_reply_chars=budget.hard_limit,
        )

        def start(on_progress: ProgressCallback | None) -> Awaitable[str]:
            if on_progress is None:
                return model.complete(system_prompt, request)
            complete: Callable[..., Awaitable[str]] = model.complete
            return complete(system_prompt, request, on_progress=on_progress)

        reply = await watch_call(start, limits, streams=streams, clock=self.clock)
        return reply.strip()


def _turn_is_cancelled() -> bool:
    """Whether the task running the compaction (the user's turn) is being cancelled.

    A compactor timeout does not count: the call runs as its own task, which is cancelled,
    and this task gets TimeoutError with no pending cancellation.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class SummaryRejected(Exception):
    """Every attempt failed; ``reason`` says how the last one did."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
