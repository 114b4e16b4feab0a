"""The memory summariser at compaction, and the memory_append_log / memory_edit tools."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from copaw_context.core.config.running import parse_running_config
from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory import MemoryEvent, MemoryFiles, MemoryIndex, MemoryTools
from copaw_context.core.memory.summariser import (
    MemorySummariser,
    parse_memory_entries,
    render_transcript,
)
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ScriptedTextModel
from tests.memory_doubles import record

NOON = datetime(2024, 5, 1, 12, 0).astimezone()


def summariser(
    workspace: Path, model: ScriptedTextModel | None, **options: object
) -> tuple[MemorySummariser, list[MemoryEvent]]:
    events: list[MemoryEvent] = []
    files = MemoryFiles(workspace, clock=lambda: NOON)
    return MemorySummariser(files, model, on_event=events.append, **options), events  # type: ignore[arg-type]


def todays_log(workspace: Path) -> Path:
    return workspace / "memory" / "2024-05-01.md"


async def test_entries_the_model_writes_go_to_todays_log(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text("## Preferences\n\n- Likes tea\n", encoding="utf-8")
    model = ScriptedTextModel(
        [
            "- Preference: answers in Chinese\n"
            "- Lesson: `npm ci` failed on node 16; node 20 fixed it\n"
            "- Preference: likes tea"
        ]
    )
    memory, events = summariser(tmp_path, model)
    memory.on_compaction(record("请用中文回答", "npm ci fails"))
    assert memory.pending == 1
    await memory.drain()
    assert todays_log(tmp_path).read_text(encoding="utf-8") == (
        "# 2024-05-01\n\n"
        "- 12:00 [summariser] Preference: answers in Chinese\n"
        "- 12:00 [summariser] Lesson: `npm ci` failed on node 16; node 20 fixed it\n"
    )  # "likes tea" is already in MEMORY.md
    (event,) = events
    assert (event.kind, event.entries, event.trigger, event.session_id) == (
        "memory_summary",
        2,
        "auto",
        "s1",
    )
    system_prompt, request = model.calls[0].system_prompt, model.calls[0].request
    assert "[SILENT]" in system_prompt and "Try-error lessons" in system_prompt
    assert "- Likes tea" in request and "请用中文回答" in request


async def test_silent_answer_writes_nothing(tmp_path: Path) -> None:
    memory, events = summariser(tmp_path, ScriptedTextModel(["[SILENT]"]))
    memory.on_compaction(record("hi"))
    await memory.drain()
    assert not todays_log(tmp_path).exists()
    assert [e.kind for e in events] == ["memory_summary_silent"]


@pytest.mark.parametrize(
    "failure", [RuntimeError("provider down"), TimeoutError(), ValueError("bad")]
)
async def test_model_failure_is_reported_never_raised_and_falls_back_to_extractive(
    tmp_path: Path, failure: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    memory, events = summariser(tmp_path, ScriptedTextModel([failure]))
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        memory.on_compaction(record("hi"))
        await memory.drain()
    assert not todays_log(tmp_path).exists()  # "hi" holds no constraint or error to keep
    (event,) = events
    assert event.kind == "memory_summary_silent" and event.fallback_reason
    assert "no constraints or errors to keep" in event.message
    assert "writing the extractive entries" in caplog.text


async def test_a_slow_model_times_out(tmp_path: Path) -> None:
    memory, events = summariser(
        tmp_path, ScriptedTextModel(["- x"], gate=asyncio.Event()), timeout_seconds=0.01
    )
    event = await memory.summarise(record("hi"))
    assert event.kind == "memory_summary_silent" and "did not answer" in event.message
    assert events == [event] and not todays_log(tmp_path).exists()


async def test_a_failing_event_callback_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(event: MemoryEvent) -> None:
        raise RuntimeError("callback bug")

    files = MemoryFiles(tmp_path, clock=lambda: NOON)
    memory = MemorySummariser(files, ScriptedTextModel(["- Preference: x"]), on_event=broken)
    with caplog.at_level(logging.ERROR, logger="copaw_context"):
        memory.on_compaction(record("hi"))
        await memory.drain()
    assert "callback failed" in caplog.text
    assert todays_log(tmp_path).exists()


async def test_jobs_of_one_workspace_run_one_at_a_time(tmp_path: Path) -> None:
    gate = asyncio.Event()
    model = ScriptedTextModel(["- Preference: one", "- Preference: two"], gate=gate)
    first, _ = summariser(tmp_path, model)
    second, _ = summariser(tmp_path, model)  # another summariser, same workspace
    first.on_compaction(record("a"))
    second.on_compaction(record("b"))
    await model.called.wait()  # the first job reaches the model
    for _ in range(50):
        await asyncio.sleep(0)
    assert len(model.calls) == 1  # the second waits for the first, which waits for the gate
    gate.set()
    await asyncio.gather(first.drain(), second.drain())
    assert model.most_active == 1 and len(model.calls) == 2
    text = todays_log(tmp_path).read_text(encoding="utf-8")
    assert "Preference: one" in text and "Preference: two" in text


async def test_disabled_without_model_or_messages_or_loop_does_nothing(tmp_path: Path) -> None:
    model = ScriptedTextModel()
    off, _ = summariser(tmp_path, model, enabled=False)
    off.on_compaction(record("hi"))
    no_model, _ = summariser(tmp_path, None)
    no_model.on_compaction(record("hi"))
    empty, _ = summariser(tmp_path, model)
    empty.on_compaction(CompactionRecord("clear", "s", "a", (), None))
    assert (off.pending, no_model.pending, empty.pending, model.calls) == (0, 0, 0, [])
    assert not off.enabled and not no_model.enabled


def test_on_compaction_outside_an_event_loop_only_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory, _ = summariser(tmp_path, ScriptedTextModel(["- x"]))
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        memory.on_compaction(record("hi"))
    assert "no running event loop" in caplog.text and memory.pending == 0


async def test_from_config_uses_language_and_switches(tmp_path: Path) -> None:
    config = parse_running_config(
        {"running": {"light_context_config": {"language": "zh"}, "memory": {"memory_dir": "mem"}}}
    )
    model = ScriptedTextModel(["- 偏好：回答用中文"])
    memory = MemorySummariser.from_config(config, tmp_path, model)
    await memory.summarise(record("请用中文"))
    assert "[SILENT]" in model.calls[0].system_prompt and "偏好" in model.calls[0].system_prompt
    assert "离开上下文的消息" in model.calls[0].request
    assert any((tmp_path / "mem").glob("*.md"))
    off = parse_running_config(
        {"running": {"reme_light_memory_config": {"summarize_when_compact": False}}}
    )
    assert not MemorySummariser.from_config(off, tmp_path, model).enabled


def test_parse_memory_entries() -> None:
    assert parse_memory_entries("[SILENT]") is None
    assert parse_memory_entries("  `[silent]`\n") is None
    assert parse_memory_entries("") is None
    assert parse_memory_entries("```\n- a\n- b\n```") == ["a", "b"]
    assert parse_memory_entries("## Heading\n* one\n  more\n+ two\nThat is all.") == [
        "one more",
        "two",
    ]
    assert parse_memory_entries("- real\n[SILENT]") == ["real"]
    assert parse_memory_entries("The user likes tea.") == ["The user likes tea."]
    assert len(parse_memory_entries("\n".join(f"- {n}" for n in range(50))) or []) == 20


def test_render_transcript_is_bounded_and_keeps_both_ends() -> None:
    parts = (
        TranscriptPart("tool_call", '{"cmd": "make"}', "shell"),
        TranscriptPart("tool_result", "E" * 10000, "shell", is_error=True),
        TranscriptPart("thinking", "private"),
    )
    messages = tuple(
        TranscriptMessage("assistant", "friday", (TranscriptPart("text", f"step {n}"), *parts))
        for n in range(40)
    )
    text = render_transcript(messages, 20000)
    assert len(text.encode("utf-8")) <= 20000
    assert "step 0" in text and "step 39" in text and "message(s) omitted" in text
    assert "-> call shell" in text and "<- shell (error)" in text and "private" not in text
    assert "chars cut" in text
    huge = (TranscriptMessage("user", "user", (TranscriptPart("text", "x" * 3900),) * 30),)
    assert len(render_transcript(huge, 5000).encode("utf-8")) <= 5000


# --- the log and edit tools --------------------------------------------------------------------


def tools_at(workspace: Path, clock: Callable[[], datetime] = lambda: NOON) -> MemoryTools:
    return MemoryTools(MemoryFiles(workspace, clock=clock), MemoryIndex(workspace))


async def test_memory_append_log_tool(tmp_path: Path) -> None:
    tools = tools_at(tmp_path)
    assert await tools.memory_append_log("Deployed v2") == "Noted in memory/2024-05-01.md."
    assert "- 12:00 [agent] Deployed v2" in todays_log(tmp_path).read_text(encoding="utf-8")
    assert await tools.memory_append_log("  ") == (
        "Error: could not write the log: the log entry is empty; write what should be remembered"
    )
    assert (await tools.memory_append_log("x" * 20000)).startswith(
        "Error: could not write the log: the log entry is 20000 bytes"
    )
    assert [f.__name__ for f in tools.functions()] == [
        "memory_append_log",
        "memory_edit",
        "memory_search",
    ]
    assert all(f.__doc__ and "Args:" in f.__doc__ for f in tools.functions())


async def test_memory_edit_tool(tmp_path: Path) -> None:
    tools = tools_at(tmp_path)
    assert await tools.memory_edit("Preferences", "- pnpm") == (
        "Added to section 'Preferences' of MEMORY.md."
    )
    assert await tools.memory_edit("## Preferences", "- yarn", "replace") == (
        "Replaced section 'Preferences' of MEMORY.md."
    )
    assert (tmp_path / "MEMORY.md").read_text(encoding="utf-8") == "## Preferences\n\n- yarn\n"
    assert await tools.memory_edit("Preferences", "- x", "append") == (
        "Error: mode must be 'add' or 'replace', got 'append'."
    )
    assert (await tools.memory_edit("../secrets", "- x")).startswith(
        "Error: could not edit MEMORY.md: the section title looks like a path"
    )
    assert (await tools.memory_edit("Tools", "## Other\n- x")).startswith(
        "Error: could not edit MEMORY.md: the content has a '#' or '##' heading"
    )
    assert (await tools.memory_edit("Tools", 5)).startswith(  # type: ignore[arg-type]
        "Error: could not edit MEMORY.md: the content must be text"
    )


async def test_tools_report_a_held_lock_as_text(tmp_path: Path) -> None:
    files = MemoryFiles(tmp_path, lock_timeout=0.05, clock=lambda: NOON)
    tools = MemoryTools(files, MemoryIndex(tmp_path))
    held = files.memory_lock()
    held.acquire()
    try:
        text = await tools.memory_edit("Tools", "- x")
    finally:
        held.release()
    assert (
        text == "Error: could not edit MEMORY.md: another process holds the memory file; try again."
    )
