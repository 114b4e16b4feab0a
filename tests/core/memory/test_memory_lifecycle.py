"""The memory summaries against a model that is down or hung, and at shutdown (found from
outside): the breaker pauses the model, ``close()`` waits a bounded time, and what did not
finish (stopped by ``close()``, or cut off by the event loop's end without ``close()``) is
kept on disk and summarised at the next start, with a visible WARNING.

Host-neutral (the installed major's hook), so both test environments run it.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

import copaw_context
from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.memory import MemorySummariser
from copaw_context.core.memory.events import MemoryEvent
from copaw_context.testing import ScriptedTextModel
from tests.memory_doubles import record

__all__ = [
    "test_a_hung_memory_model_is_paused_by_the_breaker",
    "test_close_waits_a_bounded_time_and_the_rest_runs_at_the_next_start",
    "test_a_summary_cut_off_by_the_loop_end_is_logged_and_kept",
    "test_kept_inputs_stay_in_the_workspace_and_a_bad_one_is_left_alone",
]

LESSON = "Never run the migration on the prod database without a backup."


def config(**memory: Any) -> RunningConfig:
    light = {"compactor_timeout_seconds": 0.05, "compactor_failure_limit": 2}
    return parse_running_config({"running": {"light_context_config": light, "memory": memory}})


def hung() -> ScriptedTextModel:
    """A model that never answers (its gate is never opened)."""
    return ScriptedTextModel(gate=asyncio.Event())


def pending_files(workspace: Path) -> list[Path]:
    return sorted((workspace / "memory" / ".pending").glob("*.json"))


def log_text(workspace: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in (workspace / "memory").glob("*.md"))


async def test_a_hung_memory_model_is_paused_by_the_breaker(tmp_path: Path) -> None:
    events: list[MemoryEvent] = []
    model = hung()
    summariser = MemorySummariser.from_config(config(), tmp_path, model, on_event=events.append)
    for place in ("prod", "staging", "billing", "search", "auth", "reports"):
        summariser.on_compaction(record(f"Never run the migration on the {place} database."))
    # The timeout follows compactor_timeout_seconds (was a fixed 120 s per summary).
    await asyncio.wait_for(summariser.drain(), 60)

    # 2 failures open the breaker for 2 summaries; the retry fails: 4 more.
    assert len(model.calls) == 3
    assert len(events) == 6 and all(e.kind == "memory_summary" for e in events)
    assert all(e.method == "extractive" for e in events)  # the data is kept without the model
    skipped = [e for e in events if "made without it" in (e.fallback_reason or "")]
    assert "this summary and the next 1 are made without it" in (events[2].fallback_reason or "")
    assert len(skipped) == 3
    assert "did not answer in time" in (events[0].fallback_reason or "")
    assert log_text(tmp_path).count("Never run the migration on the") == 6
    assert pending_files(tmp_path) == []


async def test_close_waits_a_bounded_time_and_the_rest_runs_at_the_next_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A long per-call timeout: only close()'s own limit (0: do not wait) can end the wait.
    settings = parse_running_config(
        {
            "running": {
                "light_context_config": {"compactor_timeout_seconds": 3600},
                "memory": {"close_timeout_seconds": 0},
            }
        }
    )
    hook = copaw_context.MemoryCompactionHook(settings, tmp_path)
    model = hung()
    hook.engine.memory.bind_model(model)
    hook.engine.memory.on_compaction(record(LESSON))
    hook.engine.memory.on_compaction(record("Always answer in French."))
    await model.called.wait()
    assert hook.pending == 2
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        await asyncio.wait_for(hook.close(), 60)  # was: waits for the hung model
    assert hook.pending == 0
    assert "close() stopped 2 memory summaries" in caplog.text
    assert len(pending_files(tmp_path)) == 2 and log_text(tmp_path) == ""

    answers = ScriptedTextModel(["- Lesson: back up prod before a migration", "- Prefers French"])
    async with copaw_context.MemoryCompactionHook(settings, tmp_path) as again:
        again.engine.memory.bind_model(answers)  # the next start
        assert again.engine.memory.summariser is not None
        await again.engine.memory.summariser.drain()  # this close() would not wait either
    assert len(answers.calls) == 2 and pending_files(tmp_path) == []
    text = log_text(tmp_path)
    assert "back up prod before a migration" in text and "Prefers French" in text


async def test_a_summary_cut_off_by_the_loop_end_is_logged_and_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = config()

    async def forgets_close() -> None:
        hook = copaw_context.MemoryCompactionHook(settings, tmp_path)
        model = ScriptedTextModel(gate=asyncio.Event())
        hook.engine.memory.bind_model(model)
        hook.engine.memory.on_compaction(record(LESSON))
        await model.called.wait()
        _keep.append(hook)  # still referenced: it is not collected, the loop just ends

    _keep: list[Any] = []
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        await asyncio.to_thread(asyncio.run, forgets_close())  # a real asyncio.run ending
    assert "a memory summary was interrupted because the hook was not closed" in caplog.text
    assert len(pending_files(tmp_path)) == 1

    answers = ScriptedTextModel(["- Lesson: back up prod before a migration"])
    async with copaw_context.MemoryCompactionHook(settings, tmp_path) as again:
        again.engine.memory.bind_model(answers)
    assert "back up prod before a migration" in log_text(tmp_path)
    assert pending_files(tmp_path) == []
    _keep.clear()


async def test_kept_inputs_stay_in_the_workspace_and_a_bad_one_is_left_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "memory").mkdir(parents=True)
    outside.mkdir()
    (workspace / "memory" / ".pending").symlink_to(outside, target_is_directory=True)
    model = ScriptedTextModel(["- Lesson: back up prod before a migration"])
    summariser = MemorySummariser.from_config(config(), workspace, model)
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        summariser.on_compaction(record(LESSON))
        await summariser.drain()
    assert "could not keep the summary's input" in caplog.text
    assert list(outside.iterdir()) == []  # nothing written through the link
    assert "back up prod before a migration" in log_text(workspace)  # the summary still ran

    (workspace / "memory" / ".pending").unlink()
    bad = workspace / "memory" / ".pending" / "20240501T120000-bad.json"
    bad.parent.mkdir()
    bad.write_text("{not json", encoding="utf-8")
    caplog.clear()
    again = MemorySummariser.from_config(config(), workspace, ScriptedTextModel())
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        again.resume()
        await again.drain()
    assert "is not a readable pending summary" in caplog.text
    assert bad.read_text(encoding="utf-8") == "{not json"  # kept for a look, not deleted
