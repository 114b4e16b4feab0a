"""A scripted memory model and compaction records for the memory summariser tests."""

from __future__ import annotations

import asyncio

from copaw_context.core.events import CompactionRecord
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = ["ScriptedModel", "record"]


class ScriptedModel:
    """A tiny host-neutral model: answers from a list (an exception is raised), records calls."""

    def __init__(self, *answers: str | BaseException, gate: asyncio.Event | None = None) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, str]] = []
        self.gate = gate
        self.active = 0
        self.most_active = 0
        self.called = asyncio.Event()

    async def complete(self, system_prompt: str, request: str) -> str:
        self.calls.append((system_prompt, request))
        self.called.set()
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            if self.gate is not None:
                await self.gate.wait()
            await asyncio.sleep(0)
            answer = self.answers.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            return answer
        finally:
            self.active -= 1


def record(*texts: str, trigger: str = "auto") -> CompactionRecord:
    messages = tuple(
        TranscriptMessage("user", "user", (TranscriptPart("text", text),), "2024-05-01T11:00")
        for text in texts
    )
    return CompactionRecord(trigger, "s1", "friday", messages, "summary")
