"""The memory summariser: at each compaction, the user's preferences and try-error lessons in the
removed messages go to today's log.

It is host-neutral: it reads a :class:`~copaw_context.core.events.CompactionRecord` (neutral
transcript messages) and talks to a :class:`~copaw_context.core.memory.events.MemoryModel`.
:meth:`MemorySummariser.on_compaction` is a compaction listener: it schedules the work as a
background task and returns at once. Jobs of one workspace run one at a time (an asyncio lock
per workspace and event loop; the log append itself holds the file's lock). Nothing is ever
raised into the caller: failures are logged and reported as
:class:`~copaw_context.core.memory.events.MemoryEvent`.

Every request fits the model's window (:mod:`.window`): MEMORY.md is shortened and a transcript
too large for one request is staged, one request per part. When the model fails or rejects a
request, the user's constraints and the exact error lines of the removed messages are written
instead (the extractive path, ``method="extractive"``). Each call has the compactor's
progress-based timeout (``compactor_timeout_seconds``), and the compactor's breaker: after
``compactor_failure_limit`` failures in a row the model is not asked for a pause of summaries
(extractive meanwhile). Built :meth:`~MemorySummariser.from_config`, each job's input is kept
on disk until it is done (:mod:`._jobs`), so ``close()`` can stop waiting after
``memory.close_timeout_seconds`` and nothing is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.state import SessionState
from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory._jobs import SummaryJobs
from copaw_context.core.memory._pending import PendingSummaries
from copaw_context.core.memory._render import (
    MAX_ENTRIES,
    MAX_ENTRY_CHARS,
    clip,
    parse_memory_entries,
    render_message,
    render_transcript,
)
from copaw_context.core.memory.events import (
    MemoryEvent,
    MemoryEventCallback,
    MemoryModel,
    emit_memory_event,
)
from copaw_context.core.memory.files import MIN_PROMPT_MAX_BYTES, MemoryFiles
from copaw_context.core.memory.instructions import summariser_request, summariser_system_prompt
from copaw_context.core.memory.markdown import bullet_key, entry_items, log_entry_text
from copaw_context.core.memory.window import MIN_ROOM_TOKENS, group_to_fit, request_budget
from copaw_context.core.store.copies import StoreOpener
from copaw_context.core.summary.breaker import CompactorBreaker
from copaw_context.core.summary.deadline import ProgressCallback, call_timeout, watch_call
from copaw_context.core.summary.facts import extract_facts
from copaw_context.core.tokens import TokenCounter, make_token_counter
from copaw_context.core.transcript import TranscriptMessage

__all__ = ["MemorySummariser", "memory_window", "parse_memory_entries", "render_transcript"]

logger = logging.getLogger("copaw_context")

_REPLY_TOKENS = 1000  # a reply of up to 20 short entries

_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def memory_window(config: RunningConfig) -> int | None:
    """The window of the memory model in tokens: ``running.memory.model_max_input_length``,
    else the agent's ``running.max_input_length`` when the file sets it (``None``: the
    model's own ``context_size`` decides)."""
    if config.memory.model_max_input_length is not None:
        return config.memory.model_max_input_length
    return config.max_input_length if config.max_input_length_is_set else None


def _workspace_lock(key: str) -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    return _LOCKS.setdefault(loop, {}).setdefault(key, asyncio.Lock())


class MemorySummariser:
    """Appends what is worth remembering from each compaction to today's log, in the background."""

    def __init__(
        self,
        files: MemoryFiles,
        model: MemoryModel | None,
        *,
        language: Literal["en", "zh"] = "en",
        enabled: bool = True,
        memory_prompt_max_bytes: int = 16000,
        transcript_max_bytes: int = 48000,
        timeout_seconds: float = 120.0,
        on_event: MemoryEventCallback | None = None,
        counter: TokenCounter | None = None,
        max_input_tokens: int | None = None,
        failure_limit: int = 3,
        pause_max: int = 32,
        keep_pending: bool = False,
    ) -> None:
        self._files = files
        self._counter = counter or make_token_counter()
        self._max_input_tokens = max_input_tokens
        self._model = model
        self._language: Literal["en", "zh"] = language
        self._enabled = enabled
        self._memory_prompt_max_bytes = memory_prompt_max_bytes
        self._transcript_max_bytes = transcript_max_bytes
        self._timeout = timeout_seconds
        self._on_event = on_event
        # A model that keeps failing (down, hung) is not asked again for a while: the breaker
        # of the compactor, kept in memory for this summariser.
        self._breaker = CompactorBreaker(SessionState({}), limit=failure_limit, max_pause=pause_max)
        store = PendingSummaries(files.memory_dir, files.workspace) if keep_pending else None
        self._pending = store
        self._jobs = SummaryJobs(self._run, store)

    @classmethod
    def from_config(
        cls,
        config: RunningConfig,
        workspace: str | Path,
        model: MemoryModel | None,
        *,
        on_event: MemoryEventCallback | None = None,
    ) -> MemorySummariser:
        """A summariser with the settings of ``config`` (``running.memory``, the language)."""
        memory = config.memory
        light = config.light_context_config
        return cls(
            MemoryFiles(workspace, memory.memory_dir),
            model,
            language=light.language,
            enabled=memory.enabled and memory.summarise_on_compact,
            memory_prompt_max_bytes=memory.memory_prompt_max_bytes,
            on_event=on_event,
            timeout_seconds=light.compactor_timeout_seconds,
            counter=make_token_counter(light.token_counter),
            max_input_tokens=memory_window(config),
            failure_limit=light.compactor_failure_limit,
            pause_max=light.compactor_pause_max_compactions,
            keep_pending=True,
        )

    @property
    def enabled(self) -> bool:
        """Whether compactions are summarised (config on and a model given)."""
        return self._enabled and self._model is not None

    @property
    def pending(self) -> int:
        """Jobs scheduled and not finished yet."""
        return self._jobs.pending

    @property
    def files(self) -> MemoryFiles:
        """The memory files it writes."""
        return self._files

    def on_compaction(self, record: CompactionRecord) -> None:
        """Compaction listener: schedule a summary of ``record`` and return at once.

        Does nothing when disabled, without a model, or for a record without messages. Must
        be called with an event loop running (as compaction listeners are); never raises.
        """
        if not self.enabled or not record.messages:
            return
        if not self._jobs.schedule(record):
            logger.warning("memory summariser: no running event loop; compaction not summarised")

    def keep_pending_in(self, opener: StoreOpener) -> None:
        """Keep the unfinished summaries' inputs in the shared store too, so any replica's
        next start runs them (:mod:`._pending_shared`; before :meth:`resume`)."""
        if self._pending is not None:
            self._pending.share(opener)

    def resume(self) -> None:
        """Run, in the background, the summaries an earlier process left unfinished (their
        inputs saved in ``<memory_dir>/.pending/``, and with a shared store those any replica
        left there); once, and only when enabled."""
        if self.enabled:
            self._jobs.resume()

    async def drain(self) -> None:
        """Wait until every scheduled job has finished (for shutdown and tests)."""
        await self._jobs.drain()

    async def close(self, *, cancel: bool = False, wait_seconds: float | None = None) -> int:
        """Finish (or with ``cancel``, abandon) the scheduled jobs, waiting at most
        ``wait_seconds`` (None: no limit); jobs stopped then keep their saved inputs for
        the next start. Returns how many were stopped."""
        return await self._jobs.close(wait_seconds, cancel=cancel)

    async def _run(self, record: CompactionRecord) -> MemoryEvent | None:
        try:
            return await self.summarise(record)
        except Exception:  # summarise() reports its own failures; this is a last resort
            logger.exception("memory summariser: unexpected failure")
            return None

    async def summarise(self, record: CompactionRecord) -> MemoryEvent:
        """Summarise ``record`` now (one job per workspace at a time) and report the outcome.

        Never raises for a model or file failure: the event says what happened.
        """
        started = time.monotonic()
        base = MemoryEvent(
            "memory_summary_failed",
            str(self._files.workspace),
            trigger=record.trigger,
            session_id=record.session_id,
        )
        async with _workspace_lock(str(self._files.memory_dir)):
            try:
                event = await self._summarise(record, base)
            except Exception as error:  # reported, never raised: keep what needs no model
                reason = f"the request could not be built: {type(error).__name__}: {error}"
                try:
                    event = await self._extractive(record, base, reason)
                except Exception as second:
                    failed = f"{type(second).__name__}: {second}"
                    message = f"{reason}; then {failed}; nothing was written"
                    event = replace(base, message=message)
        event = replace(event, duration_seconds=time.monotonic() - started)
        await emit_memory_event(event, self._on_event)
        return event

    async def _summarise(self, record: CompactionRecord, base: MemoryEvent) -> MemoryEvent:
        assert self._model is not None
        breaker = self._breaker
        if not breaker.allows("auto"):
            breaker.skipped()
            left = breaker.paused_left
            which = f"this summary and the next {left} are" if left else "this summary is"
            reason = (
                f"the model failed {breaker.failures} times in a row: {which} made without it "
                "(running.light_context_config.compactor_failure_limit; then it is tried again)"
            )
            return await self._extractive(record, base, reason)
        system_prompt = summariser_system_prompt(self._language)
        budget = request_budget(self._model, self._max_input_tokens)
        memory_text = await self._memory_text(system_prompt, budget)
        requests = await asyncio.to_thread(
            self._requests, record.messages, memory_text, system_prompt, budget
        )
        entries: list[str] = []
        for request in requests:
            try:
                reply = await self._call(system_prompt, request)
            except TimeoutError as error:
                reason = f"the model did not answer in time ({error})"
                return await self._failed(record, base, reason)
            except Exception as error:  # a provider error, e.g. a request it rejects
                reason = f"the model failed: {type(error).__name__}: {error}"
                return await self._failed(record, base, reason)
            if not isinstance(reply, str):
                reason = f"the model returned {type(reply).__name__}, not text"
                return await self._failed(record, base, reason)
            entries.extend(parse_memory_entries(reply) or [])
        breaker.succeeded()
        if not entries:
            return replace(base, kind="memory_summary_silent", message="nothing worth keeping")
        return await self._write(entries[:MAX_ENTRIES], base, "llm")

    async def _call(self, system_prompt: str, request: str) -> str:
        """One model call within the compactor's progress-based timeout (see
        :mod:`copaw_context.core.summary.deadline`)."""
        assert self._model is not None
        model = self._model
        streams = bool(getattr(model, "reports_progress", False))
        tokens = self._counter.count(system_prompt) + self._counter.count(request)
        limits = call_timeout(self._timeout, tokens, _REPLY_TOKENS)

        def start(on_progress: ProgressCallback | None) -> Awaitable[str]:
            if on_progress is None:
                return model.complete(system_prompt, request)
            complete: Callable[..., Awaitable[str]] = model.complete
            return complete(system_prompt, request, on_progress=on_progress)

        return await watch_call(start, limits, streams=streams)

    async def _failed(
        self, record: CompactionRecord, base: MemoryEvent, reason: str
    ) -> MemoryEvent:
        """The model failed: count it against the breaker, then the extractive path."""
        pause = self._breaker.failed()
        if pause:
            logger.warning(
                "memory summariser: the model failed %d times in a row; the next %d summaries "
                "are extractive (no model call), then it is tried again",
                self._breaker.failures,
                pause,
            )
        return await self._extractive(record, base, reason)

    async def _memory_text(self, system_prompt: str, budget: int | None) -> str:
        """MEMORY.md for the request, within a third of the request's budget (left out when
        even the smallest rendering does not fit)."""
        limit = max(MIN_PROMPT_MAX_BYTES, self._memory_prompt_max_bytes)
        while True:
            text = await self._files.render_for_prompt(limit)
            if budget is None or not text:
                return text
            request = summariser_request(text, "", self._language)
            used = self._counter.count(system_prompt) + self._counter.count(request)
            if used <= budget // 3:
                return text
            if limit <= MIN_PROMPT_MAX_BYTES:
                return ""
            limit = max(MIN_PROMPT_MAX_BYTES, limit // 2)

    def _requests(
        self,
        messages: tuple[TranscriptMessage, ...],
        memory_text: str,
        system_prompt: str,
        budget: int | None,
    ) -> list[str]:
        """The requests for ``messages``: one, or when it would not fit ``budget``, one per
        consecutive part, each within it (a part's long texts clipped to fit)."""
        whole = render_transcript(messages, self._transcript_max_bytes)
        request = summariser_request(memory_text, whole, self._language)
        if budget is None:
            return [request]
        overhead = self._counter.count(system_prompt)
        if overhead + self._counter.count(request) <= budget:
            return [request]
        empty = summariser_request(memory_text, "", self._language)
        room = max(MIN_ROOM_TOKENS // 2, budget - overhead - self._counter.count(empty) - 16)
        rendered = [render_message(m) for m in messages]
        requests: list[str] = []
        for group in group_to_fit(rendered, room, self._counter):
            part = tuple(messages[i] for i in group)
            max_bytes = self._transcript_max_bytes
            transcript = render_transcript(part, max_bytes)
            for _ in range(12):
                used = self._counter.count(transcript)
                if used <= room or max_bytes <= 256:
                    break
                max_bytes = max(256, int(max_bytes * room / used * 0.9))
                transcript = render_transcript(part, max_bytes)
            requests.append(summariser_request(memory_text, transcript, self._language))
        return requests

    async def _extractive(
        self, record: CompactionRecord, base: MemoryEvent, reason: str
    ) -> MemoryEvent:
        """The user's constraints and exact error lines of ``record``, written without the
        model (after ``reason``)."""
        logger.warning("memory summariser: %s; writing the extractive entries", reason)
        facts = await asyncio.to_thread(extract_facts, record.messages)
        found = [*facts.constraints, *facts.error_lines, *facts.decisions]
        entries = [clip(" ".join(item.split()), MAX_ENTRY_CHARS) for item in found]
        entries = [entry for entry in entries if entry][:MAX_ENTRIES]
        if not entries:
            message = f"{reason}; no constraints or errors to keep"
            return replace(
                base, kind="memory_summary_silent", message=message, fallback_reason=reason
            )
        return await self._write(entries, replace(base, fallback_reason=reason), "extractive")

    async def _write(
        self, entries: list[str], base: MemoryEvent, method: Literal["llm", "extractive"]
    ) -> MemoryEvent:
        fresh = await self._new_entries(entries)
        if not fresh:
            return replace(base, kind="memory_summary_silent", message="only known facts")
        path = await self._files.append_log(
            "\n".join(f"- {entry}" for entry in fresh), source="summariser"
        )
        return replace(
            base,
            kind="memory_summary",
            message=f"{len(fresh)} entr{'y' if len(fresh) == 1 else 'ies'} added",
            entries=len(fresh),
            files=(str(path),),
            method=method,
        )

    async def _new_entries(self, entries: list[str]) -> list[str]:
        """``entries`` without those MEMORY.md or today's log already hold (or repeated)."""
        known_text = await self._files.read_memory()
        known_text += "\n" + await self._files.read_log(self._files.now().date())
        known = {bullet_key(log_entry_text(item)) for item in entry_items(known_text)}
        fresh: list[str] = []
        for entry in entries:
            key = bullet_key(entry)
            if key and key not in known:
                known.add(key)
                fresh.append(entry)
        return fresh
