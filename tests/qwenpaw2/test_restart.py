"""A QwenPaw 2.2 session over a restart: several turns with compactions, QwenPaw restarted,
``/compact <note>`` typed in the chat, more turns. The session reloads with our state (one
archive session id, the counts adding up, the same offload manifest); nothing is lost;
every input fits the window; the archive holds one format.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from copaw_context.qwenpaw2 import STATE_KEY
from copaw_context.testing import openai_pairing_problems
from tests.qwenpaw2.kit import (
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
    site = QwenPawSite(qwenpaw_home, "restart", monkeypatch, window=WINDOW)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)

    app = await site.start()
    try:
        replies = [await site.ask(app, f"turn {i}: count to 20000") for i in range(3)]
    finally:
        await app.stop()  # QwenPaw's shutdown: our hooks are closed and dropped
    first = site.saved_state()
    ours_first = first["middle_context"][STATE_KEY]
    assert ours_first["stats"]["compactions"] >= 1

    app = await site.start()  # a restart: new workspace, new hooks, the session from disk
    try:
        replies.append(await site.ask(app, "turn 3: count to 20000"))
        compact = await site.ask(app, "/compact keep only the requirements")
        replies.append(await site.ask(app, "turn 4: count to 20000"))
    finally:
        await app.stop()

    assert all(r.startswith("done after") for r in replies), replies
    assert compact.startswith("**Compact Complete!**") and "PARSE-17" in compact, compact
    compactor = [c for c in site.model.calls if not c.tools]
    assert any("keep only the requirements" in str(c.formatted) for c in compactor)

    # Every input the agent sent fits the window and is valid for the provider.
    calls = agent_calls(site.model)
    assert len(calls) == 10
    assert max(call_tokens(c) for c in calls) <= WINDOW, [call_tokens(c) for c in calls]
    for call in calls:
        assert openai_pairing_problems(call.formatted) == []

    # The state went on over the restart: the same session, the same offload manifest, the
    # counts added up (the automatic compaction before it, /compact after it), our summary.
    state = site.saved_state()
    ours = state["middle_context"][STATE_KEY]
    assert state["session_id"] == first["session_id"]
    assert ours["offload_refs_id"] == ours_first["offload_refs_id"]
    assert ours["stats"]["compactions"] >= ours_first["stats"]["compactions"] + 1
    assert ours["stats"]["offloaded"] == 5 > ours_first["stats"]["offloaded"] == 3
    assert "PARSE-17" in str(ours["summary"]) and "PARSE-17" in state["summary"]

    # One archive format, one session id across turns, restart and /compact.
    lines = archive_lines(site.workspace)
    assert lines and all({"session_id", "form", "message"} <= set(line) for line in lines)
    assert {line["session_id"] for line in lines} == {first["session_id"]}
    assert {line["form"] for line in lines} == {"agentscope2.Msg"}

    # Nothing lost: every request and every tool result is in the context or the archive,
    # and every tool output's full text in a saved file.
    held = [*state["context"], *(line["message"] for line in lines)]
    texts = " ".join(str(m["content"]) for m in held)
    assert all(f"turn {i}: count to 20000" in texts for i in range(5))
    results = {
        b["id"]
        for m in held
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    }
    answered = {m["tool_call_id"] for c in calls for m in c.formatted if m["role"] == "tool"}
    assert len(answered) == 5 and answered <= results
    saved = list((site.workspace / "tool_results").glob("*.txt"))
    assert len(saved) == 5 and all(p.read_text().endswith("\n19999\n20000") for p in saved)
