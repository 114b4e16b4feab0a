"""The memory summariser at the smallest summary window still writes (newuser review D9).

A small ``memory.model_max_input_length`` used to shrink the MEMORY.md limit below what
``render_for_prompt`` accepts: every summary failed with "nothing was written".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory import MemorySummariser
from copaw_context.core.memory.events import MemoryEvent
from copaw_context.core.memory.files import MemoryFiles
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ScriptedTextModel


def _record() -> CompactionRecord:
    part = TranscriptPart("text", "I always want pytest -x before commit.")
    return CompactionRecord("auto", "sid", "a", (TranscriptMessage("user", "u", (part,)),), "s")


def _memory(lines: int) -> str:
    items = "".join(f"- preference number {i} about tabs and spaces\n" for i in range(lines))
    return "# Memory\n\n## Preferences\n" + items


@pytest.mark.parametrize(("window", "lines"), [(1000, 3), (1000, 400), (2000, 400)])
async def test_summariser_at_a_small_window_writes_something(
    tmp_path: Path, window: int, lines: int
) -> None:
    config = RunningConfig.model_validate({"memory": {"model_max_input_length": window}})
    (tmp_path / "MEMORY.md").write_text(_memory(lines), encoding="utf-8")
    events: list[MemoryEvent] = []
    model = ScriptedTextModel(default="- user prefers tea", context_size=window)
    summariser = MemorySummariser.from_config(config, tmp_path, model, on_event=events.append)
    summariser.on_compaction(_record())
    await summariser.drain()
    assert events[-1].kind == "memory_summary", events[-1].message
    assert "user prefers tea" in (tmp_path / "MEMORY.md").read_text(encoding="utf-8") or any(
        "user prefers tea" in p.read_text(encoding="utf-8")
        for p in (tmp_path / "memory").glob("*.md")
    )


async def test_a_request_that_cannot_be_built_falls_back_to_extractive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "MEMORY.md").write_text(_memory(3), encoding="utf-8")

    async def refuse(self: MemoryFiles, max_bytes: int) -> str:
        raise ValueError(f"max_bytes must be at least 1124, got {max_bytes}")

    monkeypatch.setattr(MemoryFiles, "render_for_prompt", refuse)
    events: list[MemoryEvent] = []
    model = ScriptedTextModel(default="- user prefers tea", context_size=8000)
    summariser = MemorySummariser.from_config(
        RunningConfig(), tmp_path, model, on_event=events.append
    )
    summariser.on_compaction(_record())
    await summariser.drain()
    assert events[-1].kind == "memory_summary", events[-1].message
    assert "nothing was written" not in events[-1].message
    assert events[-1].fallback_reason and "max_bytes" in events[-1].fallback_reason
    assert not model.calls
