"""QwenPaw 1.1.12 with the plugin installed runs copaw-context on its own request path.

``Workspace`` + ``AgentRunner.query_handler`` as QwenPaw's app uses them, an unchanged
agent.json (``context_manager_backend: "light"``, ``max_input_length: 131072``), the model's
window set to 8,000 tokens the way a QwenPaw user sets it, QwenPaw's own
``execute_shell_command`` producing ~109 KB per turn (``seq 1 20000``); only the model is
scripted. Several turns with compactions, a restart, ``/compact <note>`` typed in the chat.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from copaw_context.qwenpaw import CopawContextManager
from copaw_context.testing import openai_pairing_problems
from tests.qwenpaw.kit import (
    QwenPawSite,
    agent_calls,
    archive_lines,
    call_tokens,
    install_plugin,
    load_plugins,
)

WINDOW = 20000


async def test_turns_restart_and_compact_keep_everything(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "turns", monkeypatch, window=WINDOW)
    running = site.agent_json["running"]
    assert running["context_manager_backend"] == "light"  # QwenPaw's own defaults
    assert running["max_input_length"] == 131072
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)

    workspace = await site.start()
    assert isinstance(workspace.context_manager, CopawContextManager)
    replies = [await site.ask(workspace, f"turn {i}: count to 20000") for i in range(3)]
    first = site.saved_memory()["copaw_context"]
    first_id = first["session_id"]
    # What our automatic compactions removed went to QwenPaw's memory manager (ReMe), as
    # QwenPaw's own manager hands it (summarize_when_compact).
    assert first["engine"]["stats"]["compactions"] >= 1
    assert workspace.memory_manager.list_summarize_status()
    await workspace.stop()

    workspace = await site.start()  # a restart: a new manager, the session from disk
    replies.append(await site.ask(workspace, "turn 3: count to 20000"))
    assert site.saved_memory()["copaw_context"]["session_id"] == first_id
    queued: list[int] = []  # QwenPaw's memory manager gets what /compact removed, once
    memory_manager = workspace.memory_manager
    queue = memory_manager.add_summarize_task
    monkeypatch.setattr(
        memory_manager,
        "add_summarize_task",
        lambda messages, **kw: (queued.append(len(messages)), queue(messages=messages, **kw)),
    )
    compact = await site.ask(workspace, "/compact keep only the requirements")
    assert len(queued) == 1 and queued[0] > 0
    replies.append(await site.ask(workspace, "turn 4: count to 20000"))
    await workspace.stop()

    assert all(r.startswith("done after") for r in replies), replies
    # /compact is ours: our reply and our summary, the note reached the compactor.
    assert compact.startswith("**Compact Complete!**"), compact
    assert "## Goal" in compact and "PARSE-17" in compact
    compactor = [c for c in site.model.calls if not c.tools]
    assert any("keep only the requirements" in str(c.formatted) for c in compactor)

    # Every input the agent sent fits the window and is valid for the provider.
    calls = agent_calls(site.model)
    assert len(calls) == 10
    assert max(call_tokens(c) for c in calls) <= WINDOW, [call_tokens(c) for c in calls]
    for call in calls:
        assert openai_pairing_problems(call.formatted) == []

    # One archive format, one session id across turns, restart and /compact.
    lines = archive_lines(site.workspace)
    assert lines and all({"session_id", "form", "message"} <= set(line) for line in lines)
    assert {line["session_id"] for line in lines} == {first_id}
    assert {line["form"] for line in lines} == {"agentscope1.Msg"}

    # Nothing lost: every request and every tool result is in the context or the archive.
    memory = site.saved_memory()
    held = [m for m, _marks in memory["content"]] + [line["message"] for line in lines]
    ids = {m["id"] for m in held}
    assert set(site.sent_ids) - {site.sent_ids[4]} <= ids  # all but /compact (not a message)
    results = {
        b["id"]
        for m in held
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    }
    answered = {m["tool_call_id"] for c in calls for m in c.formatted if m["role"] == "tool"}
    assert len(answered) == 5 and answered <= results
    # The state went on over the restart: the same offload manifest, the counts added up.
    state = memory["copaw_context"]["engine"]
    assert state["offload_refs_id"] == first["engine"]["offload_refs_id"]
    assert state["stats"]["compactions"] >= first["engine"]["stats"]["compactions"] + 2
    assert state["stats"]["offloaded"] > first["engine"]["stats"]["offloaded"]
    assert list((site.workspace / "tool_results").glob("*.txt"))
