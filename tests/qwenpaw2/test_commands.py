"""``/compact [note]`` and ``/context`` typed in QwenPaw 2.2's chat are answered by
copaw-context (the plugin's ``PRE_DISPATCH`` hook, before QwenPaw's own slash commands), on
the session QwenPaw saved: our reply, our summary, the session saved as QwenPaw saves it.
Where copaw-context is not used for the agent, ``/compact`` stays QwenPaw's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.config.files import OVERLAY_NAME
from copaw_context.qwenpaw2 import MODEL_SOURCE, STATE_KEY
from tests.qwenpaw2.kit import QwenPawSite, archive_lines, install_plugin, load_plugins

WINDOW = 20000


async def test_compact_and_context_are_ours(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "commands", monkeypatch, window=WINDOW)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    app = await site.start()
    submitted: list[tuple[int, str]] = []  # QwenPaw's memory manager: what /compact hands it
    memory = app.workspace.memory_manager
    submit = memory.submit_auto_memory

    def record(messages: list[Any], **kwargs: Any) -> Any:
        submitted.append((len(messages), kwargs.get("trigger", "")))
        return submit(messages, **kwargs)

    monkeypatch.setattr(memory, "submit_auto_memory", record)
    try:
        await site.ask(app, "turn 0: count to 20000")
        context = await site.ask(app, "/context")
        before = site.saved_state()
        compact = await site.ask(app, "/compact keep only the requirements")
        after = site.saved_state()
        context_after = await site.ask(app, "/context")
        reply = await site.ask(app, "turn 1: count to 20000")
    finally:
        await app.stop()

    assert context.startswith("**Context usage**"), context
    assert f"- Window: {WINDOW} tokens (from {MODEL_SOURCE})" in context
    assert "- Messages (2):" in context  # the request, the answer with its tool call
    # /compact is ours: our reply and our summary; the note reached the compactor.
    assert compact.startswith("**Compact Complete!**"), compact
    assert "## Goal" in compact and "PARSE-17" in compact
    compactor = [c for c in site.model.calls if not c.tools]
    assert any("keep only the requirements" in str(c.formatted) for c in compactor)
    # Saved as QwenPaw saves a session: the summary, the context, our state.
    assert "PARSE-17" in after["summary"] and len(after["context"]) < len(before["context"])
    assert after["middle_context"][STATE_KEY]["stats"]["compactions"] == 1
    assert "- Summary: 0 tokens" not in context_after
    assert reply.startswith("done after"), reply
    # What left the context went to QwenPaw's memory, as its own /compact hands it.
    assert submitted and submitted[0][1] == "compact" and submitted[0][0] >= 1
    # Archived in our format; the commands themselves are not messages of the session.
    lines = archive_lines(site.workspace)
    assert lines and {line["form"] for line in lines} == {"agentscope2.Msg"}
    texts = " ".join(str(line["message"]["content"]) for line in lines)
    assert "turn 0: count to 20000" in texts and "/compact" not in texts
    assert "/context" not in str(site.saved_state()["context"])


async def test_a_window_set_in_agent_json_wins(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = {"max_input_length": 30000}
    site = QwenPawSite(qwenpaw_home, "own-window", monkeypatch, window=WINDOW, running=running)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    app = await site.start()
    try:
        context = await site.ask(app, "/context")
    finally:
        await app.stop()
    assert "- Window: 30000 tokens (from running.max_input_length)" in context, context


async def test_without_us_compact_is_qwenpaws_and_context_says_why(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(
        qwenpaw_home, "scroll-commands", monkeypatch, window=64000, strategy="scroll"
    )
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    app = await site.start()
    try:
        await site.ask(app, "count to 20000")
        context = await site.ask(app, "/context")
        compact = await site.ask(app, "/compact")
    finally:
        await app.stop()
    assert context.startswith("**/context is copaw-context's**"), context
    assert 'strategy is "scroll"' in context
    assert not compact.startswith("**Compact Complete!**"), compact  # QwenPaw's own reply
    assert STATE_KEY not in site.saved_state().get("middle_context", {})


async def test_clear_and_new_archive_in_our_format_then_qwenpaw_resets(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "clear-new", monkeypatch, window=64000)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    app = await site.start()
    submitted: list[tuple[int, str]] = []
    memory = app.workspace.memory_manager
    submit = memory.submit_auto_memory

    def record(messages: list[Any], **kwargs: Any) -> Any:
        submitted.append((len(messages), kwargs.get("trigger", "")))
        return submit(messages, **kwargs)

    monkeypatch.setattr(memory, "submit_auto_memory", record)
    try:
        await site.ask(app, "turn 0: count to 20000")
        first = site.saved_state()
        cleared = await site.ask(app, "/clear")
        after_clear = site.saved_state()
        await site.ask(app, "turn 1: count to 20000")
        new = await site.ask(app, "/new")
        after_new = site.saved_state()
        reply = await site.ask(app, "turn 2: count to 20000")
    finally:
        await app.stop()

    assert cleared.startswith("**Context cleared.** 2 message(s) archived to dialog/"), cleared
    assert after_clear["context"] == [] and after_clear["summary"] == ""
    # QwenPaw's own /clear ran after ours: its auto-memory turns were reset.
    turns = "qwenpaw_auto_memory_turn_state"
    assert first["middle_context"][turns]["pending"]
    assert not after_clear["middle_context"].get(turns, {}).get("pending")
    assert after_clear["session_id"] == first["session_id"]
    assert new.startswith("**New session started.** 2 message(s) archived"), new
    assert after_new["context"] == [] and after_new["session_id"] != first["session_id"]
    assert (2, "new") in submitted  # QwenPaw's memory got the conversation /new ended
    assert reply.startswith("done after"), reply
    # One format in dialog/: QwenPaw's own /clear and /new found nothing left to write.
    lines = archive_lines(site.workspace)
    assert len(lines) == 4 and {line["form"] for line in lines} == {"agentscope2.Msg"}
    texts = [str(line["message"]["content"]) for line in lines]
    assert any("turn 0: count" in t for t in texts) and any("turn 1: count" in t for t in texts)
    sessions = [line["session_id"] for line in lines]
    assert sessions == [first["session_id"]] * 4  # /new starts the next session after them


async def test_our_settings_beside_agent_json_apply_and_survive_qwenpaws_rewrite(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "beside", monkeypatch, window=WINDOW)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    app = await site.start()  # Workspace.start() rewrites agent.json with QwenPaw's keys only
    overlay = '{"running": {"light_context_config": {"compactor": "extractive"}}}'
    (site.workspace / OVERLAY_NAME).write_text(overlay, encoding="utf-8")  # while it runs
    try:
        await site.ask(app, "turn 0: count to 20000")
        compact = await site.ask(app, "/compact")
    finally:
        await app.stop()
    assert compact.startswith("**Compact Complete!**"), compact
    assert [c for c in site.model.calls if not c.tools] == []  # extractive: no compactor call
    assert "compactor" not in str(site.agent_json)  # QwenPaw's file never had it
    assert (site.workspace / OVERLAY_NAME).read_text(encoding="utf-8") == overlay
