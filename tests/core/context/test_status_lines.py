"""Status lines around automatic compactions (``show_status``), through the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.context.status import status_line
from copaw_context.core.engine import ContextEngine
from copaw_context.core.events import ContextEvent
from copaw_context.testing import ScriptedTextModel
from tests.fake_host import FakeHost, FakeMessage, call, result, text, user


def _config(**light: Any) -> RunningConfig:
    return parse_running_config(
        {
            "running": {
                "max_input_length": 3000,
                "memory": {"enabled": False},
                "light_context_config": {"token_counter": "o200k_base", **light},
            }
        }
    )


def _history(turns: int) -> list[FakeMessage]:
    messages: list[FakeMessage] = []
    for n in range(turns):
        messages.append(user(f"Request {n}: check module m{n}."))
        messages.append(
            FakeMessage(
                "assistant",
                [text(f"Checking m{n}."), call(f"c{n}", "build"), result(f"c{n}", "ok\n" * 150)],
            )
        )
    messages.append(user("What next?"))
    return messages


async def _compact(tmp_path: Path, **light: Any) -> tuple[FakeHost, list[ContextEvent]]:
    events: list[ContextEvent] = []
    engine = ContextEngine(_config(**light), tmp_path, on_event=events.append)
    host = FakeHost(
        _history(8), window=3000, compactor=ScriptedTextModel(default=lambda request: "")
    )
    await engine.before_reasoning(host)
    return host, events


async def test_status_lines_before_and_after_an_automatic_compaction(tmp_path: Path) -> None:
    host, events = await _compact(tmp_path, show_status=True, compactor="extractive")
    started, done = host.status_lines
    assert started.startswith("🔄 Context compaction started... Context Status: 📝 ")
    assert " / 3000 (" in started and "msgs -> compact(" in started and ") + keep(" in started
    assert done.startswith("✅ Context compaction completed! 📝 ")
    (event,) = [e for e in events if e.kind == "compaction"]
    assert f"{event.tokens_before} -> {event.tokens_after} / 3000 tokens" in done
    assert f"{event.messages_compacted} msgs archived to dialog/" in done
    assert [e.kind for e in events][:2] == ["compaction_started", "compaction"]


async def test_the_fallback_is_named_in_the_status_line(tmp_path: Path) -> None:
    host, events = await _compact(tmp_path, show_status=True, compactor="llm")
    (event,) = [e for e in events if e.kind == "compaction"]
    assert event.fallback_reason
    assert host.status_lines[-1].startswith(
        f"⚠️ Context compaction completed with the extractive summary ({event.fallback_reason})"
    )


async def test_library_use_shows_nothing_but_gets_the_events(tmp_path: Path) -> None:
    host, events = await _compact(tmp_path, compactor="extractive")
    assert host.status_lines == []
    started = next(e for e in events if e.kind == "compaction_started")
    compaction = next(e for e in events if e.kind == "compaction")
    assert started.tokens_before == compaction.tokens_before
    assert started.messages_compacted == compaction.messages_compacted


async def test_a_failing_display_never_breaks_the_compaction(tmp_path: Path) -> None:
    class BrokenDisplay(FakeHost):
        async def show_status(self, line: str) -> None:
            raise OSError("terminal gone")

    engine = ContextEngine(_config(show_status=True, compactor="extractive"), tmp_path)
    host = BrokenDisplay(_history(8), window=3000)
    event = await engine.before_reasoning(host)
    assert event is not None and event.kind == "compaction"


async def test_a_command_compaction_is_answered_by_its_reply_not_status_lines(
    tmp_path: Path,
) -> None:
    engine = ContextEngine(_config(show_status=True, compactor="extractive"), tmp_path)
    host = FakeHost(_history(3), window=3000)
    reply = await engine.run_command(host, "compact", "")
    assert reply.startswith("**Compact Complete!**") and host.status_lines == []


def test_every_shown_kind_has_a_line_and_others_have_none() -> None:
    base = {"agent_name": "a", "session_id": "s", "window_tokens": 1000}
    assert status_line(ContextEvent(kind="archive_flushed", **base)) is None
    failed = status_line(ContextEvent(kind="compaction_failed", message="disk full", **base))
    assert failed == "❌ Context compaction failed (disk full). Nothing was removed."
    cut = status_line(
        ContextEvent(kind="truncation", message="nothing safe", tokens_before=9, **base)
    )
    assert cut is not None and cut.startswith("✂️ Context compaction: nothing safe.")
    paused = status_line(ContextEvent(kind="compactor_paused", message="the next 2", **base))
    assert paused == "⏸️ Context compactor paused: the next 2."
    overflow = status_line(ContextEvent(kind="overflow_recovery", message="retrying", **base))
    assert overflow is not None and "too long" in overflow
