"""Compaction records for the memory summariser tests (the model is
``copaw_context.testing.ScriptedTextModel``)."""

from __future__ import annotations

from copaw_context.core.events import CompactionRecord
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = ["record"]


def record(*texts: str, trigger: str = "auto") -> CompactionRecord:
    messages = tuple(
        TranscriptMessage("user", "user", (TranscriptPart("text", text),), "2024-05-01T11:00")
        for text in texts
    )
    return CompactionRecord(trigger, "s1", "friday", messages, "summary")
