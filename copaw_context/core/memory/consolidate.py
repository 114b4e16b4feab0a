"""Consolidation: the recent daily logs folded into MEMORY.md.

What was folded is recorded in ``<memory_dir>/.consolidated.json`` (per day: the bytes folded
and a hash of their end; :mod:`._record`, a document of the workspace's file store), so each
run folds only what was written since: a log that grew is folded from where the last run
stopped, one that was rewritten is folded again whole.

With a model, the model rewrites MEMORY.md with the new entries (keep what is still true, merge
duplicates, newest wins, keep the sections); its answer is checked (not empty, every section
kept, not much shorter) and replaced by the extractive merge when it fails. Each request fits
the model's window (:mod:`.window`): logs too large for one request are folded in stages, a
few days at a time, each stage rewriting the previous stage's answer; a MEMORY.md too large
to send is merged extractively, and one over ``MAX_EDIT_BYTES`` (1 MiB) is not merged at
all (the run fails and says so, as an edit does). The extractive merge
appends the new entries not already in MEMORY.md under a dated ``##`` section. MEMORY.md is
copied to a dated backup before it is rewritten.

Two consolidations never interleave (a lock file is held for the whole run, model call
included), and MEMORY.md is written under its own lock: when the agent edited it during the
model call, the new entries are merged extractively into the edited text instead, so nothing
is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.memory._checks import check_memory_size, check_proposal
from copaw_context.core.memory._record import STATE_FILE, FoldRecord
from copaw_context.core.memory.events import (
    MemoryEvent,
    MemoryEventCallback,
    MemoryModel,
    emit_memory_event,
)
from copaw_context.core.memory.files import MEMORY_FILE, MemoryFiles
from copaw_context.core.memory.instructions import (
    consolidation_request,
    consolidation_system_prompt,
)
from copaw_context.core.memory.markdown import (
    bullet_key,
    entry_items,
    log_entry_text,
    replace_section,
)
from copaw_context.core.memory.summariser import memory_window
from copaw_context.core.memory.window import MIN_ROOM_TOKENS, group_to_fit, request_budget
from copaw_context.core.store.leases import hold_lock_file
from copaw_context.core.tokens import TokenCounter, make_token_counter

__all__ = ["STATE_FILE", "ConsolidationResult", "MemoryConsolidator", "extractive_merge"]

logger = logging.getLogger("copaw_context")


@dataclass(frozen=True)
class ConsolidationResult:
    """What one consolidation did."""

    folded_days: tuple[str, ...] = ()
    entries: int = 0  # new log entries looked at
    written: bool = False  # MEMORY.md changed
    method: Literal["llm", "extractive", "none"] = "none"
    backup: Path | None = None
    fallback_reason: str | None = None
    skipped: tuple[str, ...] = field(default_factory=tuple)  # days with nothing new


def _section_title(day: str, language: str) -> str:
    return f"{day} 日志摘录" if language == "zh" else f"Notes from {day}"


def extractive_merge(
    memory_text: str, entries: dict[str, list[str]], language: Literal["en", "zh"] = "en"
) -> tuple[str, int]:
    """``memory_text`` with each day's entries that it does not hold yet appended as bullets
    under a ``## Notes from YYYY-MM-DD`` section (``## YYYY-MM-DD 日志摘录`` in Chinese).
    Returns the new text and how many bullets were added."""
    known = {bullet_key(log_entry_text(item)) for item in entry_items(memory_text)}
    text, added = memory_text, 0
    for day in sorted(entries):
        fresh: list[str] = []
        for entry in entries[day]:
            key = bullet_key(entry)
            if key and key not in known:
                known.add(key)
                fresh.append(f"- {entry}")
        if fresh:
            text = replace_section(text, _section_title(day, language), "\n".join(fresh), add=True)
            added += len(fresh)
    return text, added


class MemoryConsolidator:
    """Folds the recent daily logs of one workspace into MEMORY.md."""

    def __init__(
        self,
        files: MemoryFiles,
        model: MemoryModel | None = None,
        *,
        language: Literal["en", "zh"] = "en",
        days: int = 7,
        timeout_seconds: float = 300.0,
        max_model_bytes: int = 65536,
        on_event: MemoryEventCallback | None = None,
        counter: TokenCounter | None = None,
        max_input_tokens: int | None = None,
    ) -> None:
        self._files = files
        self._counter = counter or make_token_counter()
        self._max_input_tokens = max_input_tokens
        self._model = model
        self._language: Literal["en", "zh"] = language
        self._days = max(1, days)
        self._timeout = timeout_seconds
        self._max_model_bytes = max_model_bytes
        self._on_event = on_event

    @classmethod
    def from_config(
        cls,
        config: RunningConfig,
        workspace: str | Path,
        model: MemoryModel | None = None,
        *,
        on_event: MemoryEventCallback | None = None,
    ) -> MemoryConsolidator:
        """A consolidator with the settings of ``config`` (``running.memory``, the language)."""
        return cls(
            MemoryFiles(workspace, config.memory.memory_dir),
            model,
            language=config.light_context_config.language,
            days=config.memory.consolidate_days,
            on_event=on_event,
            counter=make_token_counter(config.light_context_config.token_counter),
            max_input_tokens=memory_window(config),
        )

    @property
    def files(self) -> MemoryFiles:
        """The memory files it writes."""
        return self._files

    @property
    def state_path(self) -> Path:
        """The record of what was folded."""
        return self._files.memory_dir / STATE_FILE

    async def consolidate(self) -> ConsolidationResult:
        """Fold what is new in the recent logs into MEMORY.md and report it.

        A model failure falls back to the extractive merge. File errors (including a lock
        held by another process for too long) are raised after a ``_failed`` event; MEMORY.md
        is written before the record of what was folded, so a failure in between only means
        those entries are looked at again (and found already there) next time.
        """
        started = time.monotonic()
        workspace = str(self._files.workspace)
        try:
            result = await self._consolidate()
        except Exception as error:
            message = f"{type(error).__name__}: {error}; unrecorded entries are folded next time"
            event = MemoryEvent("memory_consolidation_failed", workspace, message=message)
            await emit_memory_event(event, self._on_event)
            raise
        message = (
            f"folded {', '.join(result.folded_days)} into {MEMORY_FILE}"
            if result.written
            else "nothing new to fold"
        )
        event = MemoryEvent(
            "memory_consolidation",
            workspace,
            message=message,
            entries=result.entries,
            files=(str(result.backup),) if result.backup else (),
            method=result.method if result.method != "none" else "",
            fallback_reason=result.fallback_reason,
            duration_seconds=time.monotonic() - started,
        )
        await emit_memory_event(event, self._on_event)
        return result

    async def _consolidate(self) -> ConsolidationResult:
        # The model call may take minutes: another run waits at least that long.
        timeout = max(self._files.lock_timeout, self._timeout + 60)
        shared = self._files.shared
        if shared is not None:  # every replica's run, one at a time, on the shared record
            async with shared.hold("consolidate", timeout):
                await shared.pull_document(self.state_path)
                result = await self._consolidate_locked()
                await shared.push_document(self.state_path)
                return result
        lock = self._files.lock_path("consolidate")  # the file store's lease
        async with hold_lock_file(lock, self._files.workspace, timeout, self._files.lock_timeout):
            return await self._consolidate_locked()

    async def _consolidate_locked(self) -> ConsolidationResult:
        await self._files.sync_logs()  # every replica's entries, with a shared store
        record = FoldRecord(self._files, self._days)
        state = await record.load()
        pending = await asyncio.to_thread(record.pending, state)
        entries = {day: found for day, (found, _) in pending.items() if found}
        count = sum(len(found) for found in entries.values())
        skipped = tuple(sorted(day for day in pending if day not in entries))
        if not entries:
            await record.save(state, pending)
            return ConsolidationResult(entries=0, skipped=skipped)
        snapshot = await self._files.read_memory()
        check_memory_size(snapshot, MEMORY_FILE)
        proposal, reason = await self._ask_model(snapshot, entries)
        outcome: dict[str, Any] = {}

        def merged(current: str) -> str:
            check_memory_size(current, MEMORY_FILE)
            method, why, text = "extractive", reason, None
            if proposal is not None and current == snapshot:
                method, text = "llm", proposal
            elif proposal is not None:
                why = "MEMORY.md changed while the model was answering"
            if text is None:
                text, _ = extractive_merge(current, entries, self._language)
            outcome.update(method=method, why=why, written=text != current)
            return text

        backup = await self._files.update_memory(merged)
        await record.save(state, pending)
        method, why, written = outcome["method"], outcome["why"], outcome["written"]
        return ConsolidationResult(
            folded_days=tuple(sorted(entries)),
            entries=count,
            written=written,
            method="llm" if method == "llm" else "extractive",
            backup=backup,
            fallback_reason=why if self._model is not None else None,
            skipped=skipped,
        )

    async def _ask_model(
        self, memory_text: str, entries: dict[str, list[str]]
    ) -> tuple[str | None, str | None]:
        """(the model's new MEMORY.md, None) or (None, why the extractive merge is used)."""
        if self._model is None:
            return None, None
        logs = _render_logs([(day, entry) for day in sorted(entries) for entry in entries[day]])
        size = max(len(memory_text.encode("utf-8")), len(logs.encode("utf-8")))
        if size > self._max_model_bytes:
            return None, f"input too large for the model ({size} > {self._max_model_bytes} bytes)"
        stages, reason = await asyncio.to_thread(self._stages, memory_text, entries)
        if stages is None:
            return None, reason
        text = memory_text
        budget = request_budget(self._model, self._max_input_tokens)
        for stage in stages:
            if budget is not None and self._tokens(text, stage) > budget:
                # the MEMORY.md of the previous stage grew: it and its answer no longer fit
                return None, f"MEMORY.md grew too large for the model's window ({budget} tokens)"
            proposal, reason = await self._ask_once(text, stage)
            if proposal is None:
                return None, reason
            text = proposal
        return text, None

    def _stages(
        self, memory_text: str, entries: dict[str, list[str]]
    ) -> tuple[list[str] | None, str | None]:
        """The logs of each request, so that every request fits the model's budget (the
        entries in order, a stage's entries of one day under that day's heading); ``None``
        and why when MEMORY.md leaves no room."""
        budget = request_budget(self._model, self._max_input_tokens)
        items = [(day, entry) for day in sorted(entries) for entry in entries[day]]
        if budget is None:
            return [_render_logs(items)], None
        system = consolidation_system_prompt(self._language)
        overhead = self._counter.count(system) + self._counter.count(
            consolidation_request(memory_text, "", self._language)
        )
        # The answer is a whole MEMORY.md: the window holds it as well as the request.
        room = budget - overhead - self._counter.count(memory_text) // 2 - 32
        if room < MIN_ROOM_TOKENS // 2:
            return None, f"MEMORY.md is too large for the model ({budget} tokens a request)"
        texts = [f"### {day}\n- {entry}" for day, entry in items]
        groups = group_to_fit(texts, room, self._counter)
        stages = [_render_logs([items[i] for i in group]) for group in groups]
        if any(self._counter.count(stage) > room for stage in stages):
            return None, f"a log entry is too large for the model ({budget} tokens a request)"
        return stages, None

    def _tokens(self, memory_text: str, logs: str) -> int:
        """Tokens of a request, plus half of MEMORY.md's for the room its answer needs."""
        system = consolidation_system_prompt(self._language)
        request = consolidation_request(memory_text, logs, self._language)
        count = self._counter.count
        return count(system) + count(request) + count(memory_text) // 2

    async def _ask_once(self, memory_text: str, logs: str) -> tuple[str | None, str | None]:
        assert self._model is not None
        request = consolidation_request(memory_text, logs, self._language)
        try:
            reply = await asyncio.wait_for(
                self._model.complete(consolidation_system_prompt(self._language), request),
                self._timeout,
            )
        except TimeoutError:
            return None, f"the model did not answer within {self._timeout:g} s"
        except Exception as error:
            logger.warning("memory consolidation: the model failed: %s", error)
            return None, f"the model failed: {type(error).__name__}: {error}"
        return check_proposal(reply, memory_text)


def _render_logs(items: list[tuple[str, str]]) -> str:
    """``(day, entry)`` pairs as ``### day`` sections of bullets."""
    days: dict[str, list[str]] = {}
    for day, entry in items:
        days.setdefault(day, []).append(f"- {entry}")
    return "\n\n".join(f"### {day}\n" + "\n".join(lines) for day, lines in days.items())
