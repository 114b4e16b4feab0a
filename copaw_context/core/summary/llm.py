"""The LLM compactor: a separate, tool-less model call per stage, with the fallbacks.

The model's summary is accepted only when it has every required section, is not an echo of
the prompt and fits ``max_summary_chars``. A failed attempt (exception, timeout, empty,
missing sections, too long) is retried up to ``retries`` times, after an exception with an
exponential backoff, after a reply that was too long with the size stated again; then the
deterministic extractive summary is used instead. The merged result is bounded too. Either
way the previous summary is merged in, never lost, and the user's constraints, exact error
lines, file paths and reasoned decisions are carried verbatim; junk lines of the model's
reply (template slots, stray "(none)", made-up paths, near-duplicates) are dropped and
counted. The host's model is reached only through :class:`CompactorModel`.

The summary budget follows the input (:func:`~.budget.summary_budget`) within the cap
``max_summary_chars``; the call timeout follows progress (:mod:`.deadline`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from copaw_context.core.host.protocol import CompactorModel
from copaw_context.core.summary.budget import carried_chars, summary_budget
from copaw_context.core.summary.carry import carry_facts, preserve_previous
from copaw_context.core.summary.clean import clean_summary, settle_carried
from copaw_context.core.summary.deadline import (
    REFERENCE_TOKENS,
    ProgressCallback,
    ReplyRunaway,
    call_timeout,
    watch_call,
)
from copaw_context.core.summary.extractive import extractive_summary
from copaw_context.core.summary.facts import ExtractedFacts, extract_facts
from copaw_context.core.summary.fit import fit_summary
from copaw_context.core.summary.language import Language
from copaw_context.core.summary.model import Summary
from copaw_context.core.summary.prompts import (
    build_compactor_request,
    compactor_system_prompt,
    render_transcript,
    size_retry_note,
)
from copaw_context.core.summary.staging import StagePacker, stage_reply_chars, stage_room
from copaw_context.core.summary.validate import validate_summary
from copaw_context.core.tokens import TokenCounter
from copaw_context.core.transcript import TranscriptMessage

__all__ = [
    "CompactorModel",
    "CompactorResult",
    "ProgressCallback",
    "ProgressCompactorModel",
    "SummaryCompactor",
]

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


@dataclass(frozen=True)
class CompactorResult:
    """A merged summary and how it was made."""

    summary: str
    method: str  # "llm" | "extractive"
    fallback_reason: str | None = None
    stages: int = 1
    dropped_lines: int = 0  # junk lines of the model's reply dropped or fixed
    budget_chars: int = 0  # the summary budget of this compaction (see summary_budget)


@dataclass(frozen=True)
class _Job:
    """What one compaction works from, prepared off the event loop."""

    messages: tuple[TranscriptMessage, ...]
    previous: str
    facts: ExtractedFacts
    transcript: str
    budget: int


class SummaryCompactor:
    """Summarises compacted messages into the structured summary."""

    def __init__(
        self,
        *,
        mode: Literal["llm", "extractive"],
        counter: TokenCounter,
        language: Language = "en",
        timeout_seconds: float = 120.0,
        retries: int = 1,
        include_thinking: bool = True,
        max_summary_chars: int = 16000,
        retry_delay: float = 0.5,
        adaptive_budget: bool = True,
        reference_tokens: int = REFERENCE_TOKENS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.mode = mode
        self.counter = counter
        self.language = language
        self.timeout_seconds = timeout_seconds
        self.retries = retries
        self.include_thinking = include_thinking
        self.max_summary_chars = max_summary_chars  # the cap: the window must hold it
        self.retry_delay = retry_delay
        self.adaptive_budget = adaptive_budget
        self.reference_tokens = reference_tokens
        self.clock = clock

    def budget_for(self, facts: ExtractedFacts, transcript: str, previous: str) -> int:
        """The summary budget of one compaction (see :func:`~.budget.summary_budget`):
        follows the compacted ``transcript`` and ``previous`` summary, covers what the
        carry-over needs for ``facts``, never above ``max_summary_chars``."""
        if not self.adaptive_budget or self.max_summary_chars < 1000:
            return self.max_summary_chars
        return summary_budget(
            self.max_summary_chars,
            compacted_chars=len(transcript),
            previous_chars=len(previous),
            carried=carried_chars(facts),
        )

    async def summarise(
        self,
        messages: Sequence[TranscriptMessage],
        *,
        previous_summary: str,
        model: CompactorModel | None,
        extra_instruction: str = "",
        window_tokens: int | None = None,
    ) -> CompactorResult:
        """Merge ``messages`` into ``previous_summary``; never raises for model failures.

        The CPU-bound steps (fact extraction, merging, the extractive summary, staging) run
        in a worker thread, so a megabyte transcript does not stall the event loop. They get
        a tuple of frozen messages and strings: nothing the loop can change meanwhile.
        """
        job = await asyncio.to_thread(self._prepare, tuple(messages), previous_summary)
        if self.mode == "extractive" or model is None:
            summary = await asyncio.to_thread(self._extractive, job, extra_instruction)
            return CompactorResult(summary, "extractive", budget_chars=job.budget)
        reason = "no attempt"
        try:
            summary, stages = await self._llm_in_stages(
                job, model, extra_instruction, window_tokens
            )
            final, dropped = await asyncio.to_thread(self._finish, job, summary)
            return CompactorResult(
                final, "llm", stages=stages, dropped_lines=dropped, budget_chars=job.budget
            )
        except _SummaryRejected as exc:
            reason = exc.reason
        except Exception as exc:  # any model/provider failure degrades to extractive
            reason = f"{type(exc).__name__}: {exc}"
        logger.warning(
            "copaw-context: LLM compaction failed (%s); using the extractive summary", reason
        )
        summary = await asyncio.to_thread(self._extractive, job, extra_instruction)
        return CompactorResult(
            summary, "extractive", fallback_reason=reason, budget_chars=job.budget
        )

    # ----------------------------------------------------------------- internals
    def _prepare(self, messages: tuple[TranscriptMessage, ...], previous: str) -> _Job:
        facts = extract_facts(messages)
        transcript = render_transcript(messages, include_thinking=self.include_thinking)
        budget = self.budget_for(facts, transcript, previous)
        return _Job(messages, previous, facts, transcript, budget)

    def _extractive(self, job: _Job, extra_instruction: str) -> str:
        summary = extractive_summary(
            job.messages,
            previous_summary=job.previous,
            extra_instruction=extra_instruction,
            language=self.language,
            max_chars=max(1000, job.budget),
        )
        return self._fit(summary)

    def _finish(self, job: _Job, summary: str) -> tuple[str, int]:
        """The model's summary with the previous items and the verbatim facts, without junk
        lines, bounded; and the number of lines dropped or fixed."""
        kept = self._keep_previous(job.previous, summary)
        parsed = Summary.parse(kept, self.language)
        shown = f"{job.transcript}\n{job.previous}"  # what the model was shown
        doc, dropped = clean_summary(parsed, transcript=shown, known_paths=job.facts.file_paths)
        carried = carry_facts(doc, job.facts)
        settled, moved = settle_carried(carried, job.facts)
        if not (dropped or moved) and carried is doc:
            return self._fit(kept), 0
        return self._fit(settled.render()), dropped + moved

    def _fit(self, summary: str) -> str:
        """The final summary within ``max_summary_chars``, whichever way it was made."""
        return fit_summary(summary, max_chars=self.max_summary_chars, language=self.language)

    async def _llm_in_stages(
        self,
        job: _Job,
        model: CompactorModel,
        extra_instruction: str,
        window_tokens: int | None,
    ) -> tuple[str, int]:
        window = int(model.context_size)
        if window_tokens is not None:
            window = min(window, window_tokens)
        told = stage_reply_chars(job.budget, window)  # the reply reserve fits this window
        fixed = self._request_overhead(extra_instruction, told)
        packer = StagePacker(job.messages, self.counter, include_thinking=self.include_thinking)
        summary, stages = job.previous, 0
        while (
            transcript := await asyncio.to_thread(self._next, packer, summary, window, fixed, told)
        ) is not None:
            stages += 1
            request = build_compactor_request(
                transcript,
                previous_summary=summary,
                extra_instruction=extra_instruction,
                language=self.language,
                max_chars=told,
            )
            summary = await self._ask(model, request, previous=summary, budget=told)
        return summary, stages

    def _request_overhead(self, extra_instruction: str, told: int) -> int:
        """Tokens of everything in a request but the transcript and the carried summary: the
        system prompt, the instructions and rules, the note."""
        request = build_compactor_request(
            ".",
            previous_summary=".",
            extra_instruction=extra_instruction,
            language=self.language,
            max_chars=told,
        )
        system = compactor_system_prompt(self.language)
        return self.counter.count(system) + self.counter.count(request)

    def _next(
        self, packer: StagePacker, summary: str, window: int, fixed: int, told: int
    ) -> str | None:
        """The rendered transcript of the next stage, packed up to the room the summary
        carried in leaves (see :func:`~.staging.stage_room`); None when all are sent."""
        carried = self.counter.count(summary)
        room = stage_room(window, fixed_tokens=fixed, carried_tokens=carried, reply_chars=told)
        stage = packer.next_stage(room)
        return (
            None
            if stage is None
            else render_transcript(stage, include_thinking=self.include_thinking)
        )

    def _keep_previous(self, previous: str, summary: str) -> str:
        """Put back the previous Goal, Constraints and Critical Context a model reply dropped.

        Within the size budget only: past it the model's pruning wins (the raw history is in
        the dialog archive either way).
        """
        if not previous:
            return summary
        merged = preserve_previous(previous, summary, language=self.language)
        if len(merged) <= self.max_summary_chars or len(merged) <= len(summary):
            return merged
        logger.info("copaw-context: summary over budget; keeping the model's own pruning")
        return summary

    def backoff_seconds(self, failures: int) -> float:
        """The pause after the ``failures``-th failed call (0-based): doubles, capped."""
        return float(min(_MAX_RETRY_DELAY, self.retry_delay * 2**failures))

    async def _ask(self, model: CompactorModel, request: str, *, previous: str, budget: int) -> str:
        last_reason = "no attempt"
        failures = 0  # calls that raised so far
        pause = 0.0
        prompt = request
        limit = self.max_summary_chars
        for _attempt in range(self.retries + 1):
            if pause:
                await asyncio.sleep(pause)
                pause = 0.0
            try:
                text = await self._call(model, prompt, budget)
            except TimeoutError as exc:
                last_reason = str(exc) or f"compactor timed out after {self.timeout_seconds:g} s"
                continue
            except ReplyRunaway as exc:
                last_reason = f"summary too long: over {exc.chars} characters while streaming"
                note = size_retry_note(exc.chars, budget, language=self.language)
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
            if len(text) > limit:  # checked first: validating a megabyte is wasted work
                last_reason = f"summary too long: {len(text)} characters, the limit is {limit}"
                note = size_retry_note(len(text), min(limit, budget), language=self.language)
                prompt = f"{request}\n\n{note}"
                continue
            problem = validate_summary(text, language=self.language, previous_summary=previous)
            if problem is None:
                return text
            last_reason = f"invalid summary: {problem}"
        raise _SummaryRejected(last_reason)

    async def _call(self, model: CompactorModel, request: str, budget: int) -> str:
        """One compactor call, bounded by the progress-based timeout (see :mod:`.deadline`)."""
        system_prompt = compactor_system_prompt(self.language)
        streams = bool(getattr(model, "reports_progress", False))
        limits = call_timeout(
            self.timeout_seconds,
            self.counter.count(system_prompt) + self.counter.count(request),
            budget // 2,  # about 2 characters a token, mixed text
            reference_tokens=self.reference_tokens,
            max_reply_chars=self.max_summary_chars + self.max_summary_chars // 10 + 200,
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


class _SummaryRejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
