"""Issue 17 item 7: a ``/compact`` that would not free tokens says so and changes nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from copaw_context.core.engine import ContextEngine
from copaw_context.core.events import ContextEvent
from copaw_context.testing import ScriptedTextModel
from tests.fake_host import FakeHost, FakeMessage, text, user
from tests.fake_host import engine_config as config
from tests.helpers import six_section_summary


async def test_compact_of_a_two_message_chat_changes_nothing_and_says_why(
    tmp_path: Path,
) -> None:
    events: list[ContextEvent] = []
    engine = ContextEngine(config(8000, compactor="extractive"), tmp_path, on_event=events.append)
    messages = [user("Hi, can you help me?"), FakeMessage("assistant", [text("Sure, with what?")])]
    host = FakeHost(messages, window=8000)
    before = (await engine.report(host)).total
    reply = await engine.run_command(host, "compact", "")
    assert "would not free" in reply and "Compact Complete" not in reply
    assert "the context is unchanged and nothing was archived" in reply
    assert host.messages == messages and host.summary == ""
    assert (await engine.report(host)).total == before
    assert not (tmp_path / "dialog").exists() or not list((tmp_path / "dialog").glob("*.jsonl"))
    (failed,) = [e for e in events if e.kind == "compaction_failed"]
    assert failed.tokens_after == failed.tokens_before == before
    assert not [e for e in events if e.kind == "compaction"]
    assert engine.context.state(host).stats["compactions"] == 0


async def test_compact_that_frees_tokens_still_compacts(tmp_path: Path) -> None:
    engine = ContextEngine(config(8000, compactor="llm"), tmp_path)
    summary = six_section_summary(2)
    messages: list[FakeMessage] = []
    for n in range(6):
        messages.append(user(f"question {n}: " + "details " * 150))
        messages.append(FakeMessage("assistant", [text(f"answer {n}: " + "because " * 150)]))
    messages.append(user("What next?"))
    host = FakeHost(
        messages, window=8000, compactor=ScriptedTextModel(default=lambda request: summary)
    )
    before = (await engine.report(host)).total
    reply = await engine.run_command(host, "compact", "")
    assert reply.startswith("**Compact Complete!**")
    assert (await engine.report(host)).total < before


async def test_compact_no_op_names_no_summary_when_there_is_none_and_logs_at_info(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:  # newuser D3
    engine = ContextEngine(config(8000, compactor="extractive"), tmp_path)
    messages = [user("Hi, can you help me?"), FakeMessage("assistant", [text("Sure, with what?")])]
    host = FakeHost(messages, window=8000)
    with caplog.at_level(logging.INFO, logger="copaw_context"):
        reply = await engine.run_command(host, "compact", "")
    assert "would not free" in reply and "previous summary" not in reply
    (record,) = [r for r in caplog.records if "compaction_failed" in r.getMessage()]
    assert record.levelno == logging.INFO
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_compact_no_op_keeps_an_existing_summary_and_says_so(tmp_path: Path) -> None:
    engine = ContextEngine(config(8000, compactor="extractive"), tmp_path)
    messages = [user("Hi, can you help me?"), FakeMessage("assistant", [text("Sure, with what?")])]
    host = FakeHost(messages, window=8000)
    host.summary = six_section_summary(1)
    reply = await engine.run_command(host, "compact", "")
    assert "would not free" in reply and "The previous summary is kept." in reply, reply
