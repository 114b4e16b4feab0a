"""The LLM compactor: a separate, tool-less model call per stage, with the fallbacks.

The model's summary is accepted only when it has every required section, is not an echo of
the prompt and fits ``max_summary_chars``. A failed attempt (exception, timeout, empty,
missing sections, too long) is retried up to ``retries`` times, after an exception with an
exponential backoff, after a reply that was too long with the size stated again; then the
deterministic extractive summary is used instead. The merged result is bounded too. Either
way the previous summary is merged in, never lost, and the user's constraints, exact error
lines and file paths are carried verbatim. The host's model is reached only through
:class:`CompactorModel`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from copaw_context.core.summary.carry import carry_verbatim, preserve_previous
from copaw_context.core.summary.extractive import extractive_summary
from copaw_context.core.summary.facts import extract_facts
from copaw_context.core.summary.fit import fit_summary
from copaw_context.core.summary.language import Language
from copaw_context.core.summary.prompts import (
    build_compactor_request,
    compactor_system_prompt,
    render_transcript,
    size_retry_note,
)
from copaw_context.core.summary.validate import validate_summary
from copaw_context.core.tokens import TokenCounter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = ["CompactorModel", "CompactorResult", "SummaryCompactor"]

logger = logging.getLogger("copaw_context")

_INPUT_SHARE_OF_WINDOW = 0.6  # room left for the compactor's own prompt and its answer
_MAX_RETRY_DELAY = 4.0  # seconds: the backoff doubles from ``retry_delay`` up to this


class CompactorModel(Protocol):
    """The compactor's model: one request in, one reply out, no tools."""

    @property
    def context_size(self) -> int:
        """Tokens the model accepts."""
        ...

    async def complete(self, system_prompt: str, request: str) -> str:
        """The model's reply text to ``request`` under ``system_prompt``."""
        ...


@dataclass(frozen=True)
class CompactorResult:
    """A merged summary and how it was made."""

    summary: str
    method: str  # "llm" | "extractive"
    fallback_reason: str | None = None
    stages: int = 1


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
    ) -> None:
        self.mode = mode
        self.counter = counter
        self.language = language
        self.timeout_seconds = timeout_seconds
        self.retries = retries
        self.include_thinking = include_thinking
        self.max_summary_chars = max_summary_chars
        self.retry_delay = retry_delay

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
        frozen = tuple(messages)
        if self.mode == "extractive" or model is None:
            summary = await asyncio.to_thread(
                self._extractive, frozen, previous_summary, extra_instruction
            )
            return CompactorResult(summary, "extractive")
        reason = "no attempt"
        try:
            summary, stages = await self._llm_in_stages(
                frozen, previous_summary, model, extra_instruction, window_tokens
            )
            final = await asyncio.to_thread(self._finish, frozen, previous_summary, summary)
            return CompactorResult(final, "llm", stages=stages)
        except _SummaryRejected as exc:
            reason = exc.reason
        except Exception as exc:  # any model/provider failure degrades to extractive
            reason = f"{type(exc).__name__}: {exc}"
        logger.warning(
            "copaw-context: LLM compaction failed (%s); using the extractive summary", reason
        )
        summary = await asyncio.to_thread(
            self._extractive, frozen, previous_summary, extra_instruction
        )
        return CompactorResult(summary, "extractive", fallback_reason=reason)

    # ----------------------------------------------------------------- internals
    def _extractive(
        self, messages: Sequence[TranscriptMessage], previous: str, extra_instruction: str
    ) -> str:
        summary = extractive_summary(
            messages,
            previous_summary=previous,
            extra_instruction=extra_instruction,
            language=self.language,
            max_chars=self.max_summary_chars,
        )
        return self._fit(summary)

    def _finish(self, messages: Sequence[TranscriptMessage], previous: str, summary: str) -> str:
        """The model's summary with the previous items and the verbatim facts, bounded."""
        kept = self._keep_previous(previous, summary)
        carried = carry_verbatim(kept, extract_facts(messages), language=self.language)
        return self._fit(carried)

    def _fit(self, summary: str) -> str:
        """The final summary within ``max_summary_chars``, whichever way it was made."""
        return fit_summary(summary, max_chars=self.max_summary_chars, language=self.language)

    async def _llm_in_stages(
        self,
        messages: Sequence[TranscriptMessage],
        previous: str,
        model: CompactorModel,
        extra_instruction: str,
        window_tokens: int | None,
    ) -> tuple[str, int]:
        window = int(model.context_size)
        if window_tokens is not None:
            window = min(window, window_tokens)
        budget = max(
            256,
            int(window * _INPUT_SHARE_OF_WINDOW)
            - self._request_overhead(previous, extra_instruction),
        )
        transcripts = await asyncio.to_thread(self._stage_transcripts, messages, budget)
        summary = previous
        for transcript in transcripts:
            request = build_compactor_request(
                transcript,
                previous_summary=summary,
                extra_instruction=extra_instruction,
                language=self.language,
                max_chars=self.max_summary_chars,
            )
            summary = await self._ask(model, request, previous=summary)
        return summary, len(transcripts)

    def _request_overhead(self, previous: str, extra_instruction: str) -> int:
        """Tokens of everything in a request but the transcript: the system prompt, the
        instructions and rules, the note, and the summary carried from stage to stage (the
        previous one, or one as large as the summary budget at 2 characters a token)."""
        carried = max(self.counter.count(previous), self.max_summary_chars // 2)
        request = build_compactor_request(
            ".",
            previous_summary=".",
            extra_instruction=extra_instruction,
            language=self.language,
            max_chars=self.max_summary_chars,
        )
        system = compactor_system_prompt(self.language)
        return self.counter.count(system) + self.counter.count(request) + carried + 64

    def _stage_transcripts(self, messages: Sequence[TranscriptMessage], budget: int) -> list[str]:
        """The rendered transcript of each stage (see :meth:`_chunk`)."""
        return [
            render_transcript(chunk, include_thinking=self.include_thinking)
            for chunk in self._chunk(messages, budget)
        ]

    def _chunk(
        self, messages: Sequence[TranscriptMessage], budget: int
    ) -> list[list[TranscriptMessage]]:
        """Group whole messages into stages that each fit ``budget`` tokens."""
        budget = max(256, budget)
        chunks: list[list[TranscriptMessage]] = [[]]
        used = 0
        for msg in messages:
            text = render_transcript([msg], include_thinking=self.include_thinking)
            tokens = self.counter.count(text)
            if tokens > budget:
                msg = _shorten(msg, budget, self.counter)
                tokens = budget
            if used + tokens > budget and chunks[-1]:
                chunks.append([])
                used = 0
            chunks[-1].append(msg)
            used += tokens
        return [c for c in chunks if c] or [[]]

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

    async def _ask(self, model: CompactorModel, request: str, *, previous: str) -> str:
        last_reason = "no attempt"
        failures = 0  # calls that raised so far
        pause = 0.0
        prompt = request
        for _attempt in range(self.retries + 1):
            if pause:
                await asyncio.sleep(pause)
                pause = 0.0
            try:
                text = await self._call(model, prompt)
            except TimeoutError:
                last_reason = f"compactor timed out after {self.timeout_seconds:g} s"
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
            limit = self.max_summary_chars
            if len(text) > limit:  # checked first: validating a megabyte is wasted work
                last_reason = f"summary too long: {len(text)} characters, the limit is {limit}"
                note = size_retry_note(len(text), limit, language=self.language)
                prompt = f"{request}\n\n{note}"
                continue
            problem = validate_summary(text, language=self.language, previous_summary=previous)
            if problem is None:
                return text
            last_reason = f"invalid summary: {problem}"
        raise _SummaryRejected(last_reason)

    async def _call(self, model: CompactorModel, request: str) -> str:
        """One compactor call, bounded by the timeout."""
        system_prompt = compactor_system_prompt(self.language)
        reply = await asyncio.wait_for(
            model.complete(system_prompt, request), timeout=self.timeout_seconds
        )
        return reply.strip()


def _turn_is_cancelled() -> bool:
    """Whether the task running the compaction (the user's turn) is being cancelled.

    A timeout of ``asyncio.wait_for`` does not count: it raises TimeoutError and leaves the
    task with no pending cancellation.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class _SummaryRejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _shorten(msg: TranscriptMessage, budget: int, counter: TokenCounter) -> TranscriptMessage:
    """Cut the longest parts of one message so it fits a compactor stage of ``budget`` tokens.

    Only the compactor's view is cut: the message itself is archived whole. The head and the
    tail of each long part are kept, since errors are often printed last. Each part's share
    is measured in tokens with its own characters-per-token ratio (CJK text has about one
    character a token, English four), and checked again after the cut.
    """
    counts = [max(1, counter.count(p.text)) for p in msg.parts]
    total = sum(counts) or 1
    parts: list[TranscriptPart] = []
    for part, tokens in zip(msg.parts, counts, strict=True):
        share = max(32, budget * tokens // total)
        text = part.text
        for _attempt in range(4):
            if counter.count(text) <= share:
                break
            ratio = len(text) / max(1, counter.count(text))
            half = max(8, int(share * ratio * 0.45))
            omitted = len(part.text) - 2 * half
            if omitted <= 0:
                break
            text = (
                f"{part.text[:half]}\n[... {omitted} characters omitted ...]\n{part.text[-half:]}"
            )
            share = max(16, share - 16)  # the omission line costs a few tokens too
        parts.append(
            TranscriptPart(part.kind, text, part.tool_name, part.tool_call_id, part.is_error)
        )
    return TranscriptMessage(msg.role, msg.name, tuple(parts), msg.timestamp)
