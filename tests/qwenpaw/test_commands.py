"""QwenPaw's chat commands with copaw-context as its context manager.

The plugin's ``/context`` is ours (QwenPaw itself has none: the text would go to the model),
with QwenPaw's window: the active model's size when agent.json holds QwenPaw's default
131072. Without the plugin's ``/compact`` (QwenPaw's own command path), QwenPaw's
``/compact`` calls our ``compact_context`` and gets our summary; what QwenPaw then clears
(``clear_content``) is archived in our format, and ``/clear`` forgets our summary too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from qwenpaw.app.runner import control_commands

from copaw_context.qwenpaw.window import MODEL_SOURCE
from tests.qwenpaw.kit import QwenPawSite, archive_lines, install_plugin, load_plugins

WINDOW = 20000


async def test_context_is_ours_and_qwenpaws_compact_and_clear_archive_in_our_format(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "commands", monkeypatch, window=WINDOW)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    # QwenPaw's own /compact: the plugin's control command out of the way.
    monkeypatch.delitem(control_commands._COMMAND_REGISTRY, "/compact")
    workspace = await site.start()
    for i in range(2):
        await site.ask(workspace, f"turn {i}: count to 20000")

    context = await site.ask(workspace, "/context")
    assert context.startswith("**Context usage**"), context
    assert f"- Window: {WINDOW} tokens (from {MODEL_SOURCE})" in context

    queued: list[int] = []  # QwenPaw's memory manager: what /compact hands it to summarise
    memory_manager = workspace.memory_manager
    queue = memory_manager.add_summarize_task
    monkeypatch.setattr(
        memory_manager,
        "add_summarize_task",
        lambda messages, **kw: (queued.append(len(messages)), queue(messages=messages, **kw)),
    )
    before = site.saved_memory()
    compact = await site.ask(workspace, "/compact keep only the requirements")
    assert queued == [len(before["content"])]  # QwenPaw's own, once (we add none)
    assert compact.startswith("✅ **Compact Complete!**"), compact  # QwenPaw's reply ...
    assert "PARSE-17" in compact  # ... around our summary
    after = site.saved_memory()
    assert after["_compressed_summary"] and "PARSE-17" in after["_compressed_summary"]
    # Our /compact summarised everything (no request of the user waits); archived, ours.
    assert after["content"] == []
    archived = {line["message"]["id"] for line in archive_lines(site.workspace)}
    assert {m["id"] for m, _ in before["content"]} <= archived

    await site.ask(workspace, "turn 2: count to 20000")
    assert (await site.ask(workspace, "/clear")).startswith("**History Cleared!**")
    cleared = site.saved_memory()
    await workspace.stop()

    assert cleared["content"] == [] and cleared["_compressed_summary"] == ""
    assert "summary" not in cleared["copaw_context"]["engine"]  # ours is forgotten too
    lines = archive_lines(site.workspace)
    assert all({"session_id", "form", "message"} <= set(line) for line in lines), lines[-1]
    assert len({line["session_id"] for line in lines}) == 1
    texts = [str(line["message"]["content"]) for line in lines]
    for i in range(3):
        assert any(f"turn {i}: count" in t for t in texts), i


async def test_a_window_set_in_agent_json_wins(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(
        qwenpaw_home, "own-window", monkeypatch, window=WINDOW, running={"max_input_length": 30000}
    )
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    workspace = await site.start()
    context = await site.ask(workspace, "/context")
    await workspace.stop()
    assert "- Window: 30000 tokens (from running.max_input_length)" in context, context
