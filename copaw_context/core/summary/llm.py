"""The LLM compactor: a separate, tool-less model call per stage, with the fallbacks.

The model's summary is accepted only when it has every required section, is not an echo of
the prompt and fits the cap (``max_summary_chars``). A failed attempt (exception, timeout,
empty, missing sections, too long) is retried up to ``retries`` times (:mod:`.ask`), after an
exception with an exponential backoff, after a reply that was too long with the size stated
again; then the deterministic extractive summary is used instead. The merged result is
bounded too. Either
way the previous summary is merged in, never lost, and the user's constraints, exact error
lines, file paths and reasoned decisions are carried verbatim; junk lines of the model's
reply (template slots, stray "(none)", made-up paths, near-duplicates) are dropped and
counted. The host's model is reached only through :class:`CompactorModel`.

Every size figure of a compaction is in its one :class:`~.budget.SummaryBudget`, computed
once from the cap, what is compacted, the compactor's window and the room the caller gives
(:func:`~.budget.plan_budget`): the prompt asks for its ``ask``, a reply over its ``cap`` is
asked again with the size stated, a stream past its ``hard_limit`` is stopped, and the result
is fitted once to its cap and room (:func:`~.fit.fit_to_budget`). The summary crosses every
step as a :class:`~.model.Summary`: the previous one comes in parsed, each reply is parsed
once (by :func:`~.validate.check_reply`), and the result is text only when the caller asks
(:attr:`CompactorResult.text`). The call timeout follows progress (:mod:`.deadline`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from copaw_context.core.host.protocol import CompactorModel
from copaw_context.core.summary.ask import ProgressCompactorModel, ReplyAsker, SummaryRejected
from copaw_context.core.summary.budget import SummaryBudget, carried_chars, plan_budget
from copaw_context.core.summary.carry import carry_facts, essentials, keep_decided, keep_previous
from copaw_context.core.summary.clean import clean_counts, settle_counts
from copaw_context.core.summary.deadline import REFERENCE_TOKENS, ProgressCallback
from copaw_context.core.summary.extractive import MIN_SUMMARY_CHARS, extractive
from copaw_context.core.summary.facts import ExtractedFacts, extract_facts
from copaw_context.core.summary.fit import fit_to_budget
from copaw_context.core.summary.junk import drop_junk
from copaw_context.core.summary.language import Language
from copaw_context.core.summary.model import Layout, Summary
from copaw_context.core.summary.prompts import (
    build_compactor_request,
    compactor_system_prompt,
    render_transcript,
)
from copaw_context.core.summary.rules import enforce_rules
from copaw_context.core.summary.staging import StagePacker, stage_room
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


@dataclass(frozen=True)
class CompactorResult:
    """A merged summary and how it was made."""

    summary: Summary
    method: str  # "llm" | "extractive"
    budget: SummaryBudget
    fallback_reason: str | None = None
    stages: int = 1
    dropped_lines: int = 0  # junk lines of the model's reply dropped or fixed
    dropped_by_reason: Mapping[str, int] = field(default_factory=dict)
    """The lines left out or fixed, by reason (see :mod:`.junk`, :mod:`.rules`): of the
    model's reply (they add up to ``dropped_lines``), or those the extractive summary's
    construction left out (a carried error already under Blocked, a read file's snippet)."""
    calls: tuple[str, ...] = ()
    """Why each compactor model call was made, in order (its length: the calls made)."""

    @property
    def text(self) -> str:
        """The summary's text (rendered once, however often it is asked for)."""
        return self.summary.text()

    @property
    def budget_chars(self) -> int:
        """The summary budget of this compaction, in characters (the budget's target)."""
        return self.budget.target


@dataclass(frozen=True)
class _Job:
    """What one compaction works from, prepared off the event loop."""

    messages: tuple[TranscriptMessage, ...]
    previous: Summary | None
    facts: ExtractedFacts
    transcript: str
    budget: SummaryBudget


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
        self._carried_tokens = 0  # tokens of the summary the current stage carries in

    def budget_for(
        self,
        facts: ExtractedFacts,
        transcript: str,
        previous: Summary | None,
        *,
        reply_window: int | None = None,
        room: int | None = None,
    ) -> SummaryBudget:
        """The budget of one compaction (see :func:`~.budget.plan_budget`): its target
        follows the compacted ``transcript`` and ``previous`` summary and covers what the
        carry-over needs for ``facts``, never above the cap ``max_summary_chars``."""
        return plan_budget(
            self.max_summary_chars,
            compacted_chars=len(transcript),
            previous_chars=len(previous.text()) if previous is not None else 0,
            carried=carried_chars(facts),
            adaptive=self.adaptive_budget,
            reply_window=reply_window,
            room=room,
        )

    async def summarise(
        self,
        messages: Sequence[TranscriptMessage],
        *,
        previous: Summary | None = None,
        model: CompactorModel | None,
        extra_instruction: str = "",
        window_tokens: int | None = None,
        room_tokens: int | None = None,
    ) -> CompactorResult:
        """Merge ``messages`` into ``previous``; never raises for model failures.

        ``room_tokens``: what the summary may take in the context (tokens of ``counter``).
        The CPU-bound steps (fact extraction, merging, the extractive summary, staging) run
        in a worker thread, so a megabyte transcript does not stall the event loop. They get
        a tuple of frozen messages and the summary the loop no longer touches.
        """
        reply_window: int | None = None
        if self.mode == "llm" and model is not None:
            reply_window = int(model.context_size)
            if window_tokens is not None:
                reply_window = min(reply_window, window_tokens)
        job = await asyncio.to_thread(
            self._prepare, tuple(messages), previous, reply_window, room_tokens
        )
        if self.mode == "extractive" or model is None or reply_window is None:
            summary, left = await asyncio.to_thread(self._extractive, job, extra_instruction)
            return CompactorResult(
                summary, "extractive", job.budget, dropped_by_reason=dict(sorted(left.items()))
            )
        reason = "no attempt"
        calls: list[str] = []
        try:
            reply, stages = await self._llm_in_stages(
                job, model, extra_instruction, reply_window, calls
            )
            final, dropped = await asyncio.to_thread(self._finish, job, reply)
            return CompactorResult(
                final,
                "llm",
                job.budget,
                stages=stages,
                dropped_lines=sum(dropped.values()),
                dropped_by_reason=dict(sorted(dropped.items())),
                calls=tuple(calls),
            )
        except SummaryRejected as exc:
            reason = exc.reason
        except Exception as exc:  # any model/provider failure degrades to extractive
            reason = f"{type(exc).__name__}: {exc}"
        logger.warning(
            "copaw-context: LLM compaction failed (%s); using the extractive summary", reason
        )
        summary, left = await asyncio.to_thread(self._extractive, job, extra_instruction)
        return CompactorResult(
            summary,
            "extractive",
            job.budget,
            fallback_reason=reason,
            calls=tuple(calls),
            dropped_by_reason=dict(sorted(left.items())),
        )

    # ----------------------------------------------------------------- internals
    def _prepare(
        self,
        messages: tuple[TranscriptMessage, ...],
        previous: Summary | None,
        reply_window: int | None,
        room: int | None,
    ) -> _Job:
        facts = extract_facts(messages)
        transcript = render_transcript(messages, include_thinking=self.include_thinking)
        budget = self.budget_for(facts, transcript, previous, reply_window=reply_window, room=room)
        return _Job(messages, previous, facts, transcript, budget)

    def _extractive(self, job: _Job, extra_instruction: str) -> tuple[Summary, Counter[str]]:
        dropped: Counter[str] = Counter()
        summary = extractive(
            job.messages,
            previous=job.previous,
            extra_instruction=extra_instruction,
            language=self.language,
            max_chars=max(MIN_SUMMARY_CHARS, job.budget.target),
            dropped=dropped,
        )
        return self._fit(summary, job.budget), dropped

    def _finish(self, job: _Job, reply: Summary | None) -> tuple[Summary, Counter[str]]:
        """The model's summary with the previous items and the verbatim facts, without junk
        lines and with only what each section's rule allows (:mod:`.rules`), within its
        budget; and the lines dropped or fixed, by reason."""
        summary = reply if reply is not None else Summary(language=self.language, layout=Layout())
        kept = self._keep_previous(job.previous, summary)
        previous = job.previous.text() if job.previous is not None else ""
        shown = f"{job.transcript}\n{previous}"  # what the model was shown
        doc, cleaned = clean_counts(kept, transcript=shown, known_paths=job.facts.file_paths)
        ruled, broken = enforce_rules(doc, job.messages, job.facts, previous=job.previous)
        carried = carry_facts(ruled, job.facts)
        settled, moved = settle_counts(carried, job.facts)
        final, junk = drop_junk(settled)
        counts = cleaned + broken + moved + junk
        if not counts and carried is doc:
            return self._fit(kept, job.budget), counts
        return self._fit(final, job.budget), counts

    def _fit(self, summary: Summary, budget: SummaryBudget) -> Summary:
        """The final summary within its budget (cap and room), whichever way it was made."""
        return fit_to_budget(summary, budget, self.counter.count)

    async def _llm_in_stages(
        self,
        job: _Job,
        model: CompactorModel,
        extra_instruction: str,
        window: int,
        calls: list[str],
    ) -> tuple[Summary | None, int]:
        """The summary of every stage in turn (each carrying the previous stage's summary
        in); ``calls`` gets why each model call was made."""
        told = job.budget.ask  # the reply reserve fits this window
        fixed = self._request_overhead(extra_instruction, told)
        packer = StagePacker(job.messages, self.counter, include_thinking=self.include_thinking)
        summary, stages = job.previous, 0
        total = packer.known_tokens()
        while (
            staged := await asyncio.to_thread(
                self._next, packer, _text(summary), window, fixed, told
            )
        ) is not None:
            transcript, room = staged
            stages += 1
            carried = _text(summary)
            request = build_compactor_request(
                transcript,
                previous_summary=carried,
                extra_instruction=extra_instruction,
                language=self.language,
                max_chars=told,
            )
            why = (
                f"stage {stages}: transcript left after stage {stages - 1} "
                f"(a stage holds {room} tokens with the summary carried in)"
            )
            if stages == 1:
                needs = "" if total is None else f" of {total} (at least {-(-total // room)})"
                why = f"stage 1: {packer.last_tokens} tokens of transcript{needs}"
            tokens = fixed + self._carried_tokens + packer.last_tokens
            summary = await self._asker.ask(
                model,
                request,
                previous=summary,
                budget=job.budget,
                request_tokens=tokens,
                calls=calls,
                why=why,
            )
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
    ) -> tuple[str, int] | None:
        """The rendered transcript of the next stage and its room, packed up to the room the
        summary carried in leaves (see :func:`~.staging.stage_room`); None when all are sent."""
        carried = self._carried_tokens = self.counter.count(summary) if summary else 0
        room = stage_room(window, fixed_tokens=fixed, carried_tokens=carried, reply_chars=told)
        stage = packer.next_stage(room)
        if stage is None:
            return None
        return render_transcript(stage, include_thinking=self.include_thinking), room

    def _keep_previous(self, previous: Summary | None, summary: Summary) -> Summary:
        """Put back the previous Goal, Constraints, Key Decisions, planned steps and Critical
        Context a model reply dropped.

        Past the cap the model's pruning wins for the rest (the raw history is in the dialog
        archive either way), never for the decisions, the planned steps, the task, the
        constraints, the exact errors and paths (:func:`~.carry.keep_decided`,
        :func:`~.carry.essentials`): a fact lost once is lost for good, and the fit then
        leaves out the model's own items before these.
        """
        if previous is None:
            return summary
        decided = keep_decided(summary, previous)
        merged = keep_previous(decided, previous)
        if merged is decided:
            return decided
        size = len(merged.text())
        if size <= self.max_summary_chars or size <= len(decided.text()):
            return merged
        logger.info("copaw-context: summary over budget; keeping the previous essentials only")
        return keep_previous(decided, essentials(previous))

    @property
    def _asker(self) -> ReplyAsker:
        return ReplyAsker(
            counter=self.counter,
            language=self.language,
            timeout_seconds=self.timeout_seconds,
            retries=self.retries,
            retry_delay=self.retry_delay,
            reference_tokens=self.reference_tokens,
            clock=self.clock,
        )

    def backoff_seconds(self, failures: int) -> float:
        """The pause after the ``failures``-th failed call (0-based): doubles, capped."""
        return self._asker.backoff_seconds(failures)

    async def _ask(
        self,
        model: CompactorModel,
        request: str,
        *,
        previous: Summary | None,
        budget: SummaryBudget,
    ) -> Summary:
        """One stage's reply, parsed (see :class:`~.ask.ReplyAsker`)."""
        return await self._asker.ask(model, request, previous=previous, budget=budget)


def _text(summary: Summary | None) -> str:
    return "" if summary is None else summary.text()
