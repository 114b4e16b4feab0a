"""QwenPaw 2.2.2 with the plugin installed runs copaw-context's middleware on its own path.

``copaw-context qwenpaw install`` as a user types it (it finds QwenPaw 2.2 in this Python),
QwenPaw's app loading the plugin, agent.json as QwenPaw writes it with ``strategy:
"native"`` (``max_input_length: 131072``, QwenPaw's default), the model's window set to
20,000 tokens the way a QwenPaw user sets it, QwenPaw's own ``execute_shell_command``
producing ~109 KB per turn; only the model is scripted.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from copaw_context.core.toolresults.notice import TRUNCATION_NOTICE_MARKER
from copaw_context.qwenpaw2 import STATE_KEY
from copaw_context.testing import openai_pairing_problems
from tests.qwenpaw2.kit import (
    QwenPawSite,
    agent_calls,
    archive_lines,
    call_tokens,
    install_plugin,
    load_plugins,
    tool_results,
)

WINDOW = 20000


async def test_turns_compact_and_cut_with_nothing_lost(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "turns", monkeypatch, window=WINDOW)
    printed = install_plugin(qwenpaw_home)
    assert "for QwenPaw 2.2 (QwenPaw 2.2.2.post1 is installed in this Python)" in printed
    assert "agent turns: strategy 'native' -> copaw-context" in printed
    await load_plugins(qwenpaw_home)
    app = await site.start()
    running = site.agent_json["running"]
    assert running["max_input_length"] == 131072  # QwenPaw's own default, rewritten at start
    try:
        replies = [await site.ask(app, f"turn {i}: count to 20000") for i in range(3)]
    finally:
        await app.stop()

    assert all(r.startswith("done after") for r in replies), replies
    state = site.saved_state()
    ours = state["middle_context"][STATE_KEY]  # our state, saved by QwenPaw with the session
    assert ours["stats"]["compactions"] >= 1

    # Every input the agent sent fits the model's window (not agent.json's 131072) and is
    # valid for the provider; each fresh result reached the model cut by us.
    calls = agent_calls(site.model)
    assert len(calls) == 6
    assert max(call_tokens(c) for c in calls) <= WINDOW, [call_tokens(c) for c in calls]
    for call in calls:
        assert openai_pairing_problems(call.formatted) == []
    fresh = [tool_results(c)[-1] for c in calls[1::2]]
    assert all(TRUNCATION_NOTICE_MARKER in r and "tool_results/" in r for r in fresh), fresh
    # Our offload files in QwenPaw's folder; QwenPaw's own pruning cut nothing of ours.
    saved = sorted((site.workspace / "tool_results").glob("*.txt"))
    assert len(saved) == 3 and not [p for p in saved if p.name.startswith("tool-result-")]
    assert all(p.read_text().startswith("1\n2\n") for p in saved)
    assert all(p.read_text().endswith("\n19999\n20000") for p in saved)  # the full output

    # One archive format, one session id.
    lines = archive_lines(site.workspace)
    assert lines and all({"session_id", "form", "message"} <= set(line) for line in lines)
    assert {line["form"] for line in lines} == {"agentscope2.Msg"}
    assert {line["session_id"] for line in lines} == {state["session_id"]}

    # Nothing lost: every request and every tool result is in the context or the archive.
    held = [*state["context"], *(line["message"] for line in lines)]
    texts = " ".join(str(m["content"]) for m in held)
    assert all(f"turn {i}: count to 20000" in texts for i in range(3))
    results = {
        b["id"]
        for m in held
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    }
    answered = {m["tool_call_id"] for c in calls for m in c.formatted if m["role"] == "tool"}
    assert len(answered) == 3 and answered <= results


async def test_an_agent_on_qwenpaws_scroll_strategy_is_left_alone(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    site = QwenPawSite(qwenpaw_home, "scroll", monkeypatch, window=64000, strategy="scroll")
    printed = install_plugin(qwenpaw_home)
    assert "agent scroll: strategy 'scroll' -> QwenPaw's own" in printed
    assert 'set it to "native" for copaw-context' in printed
    await load_plugins(qwenpaw_home)
    app = await site.start()
    try:
        with caplog.at_level(logging.WARNING, logger="qwenpaw.copaw_context"):
            reply = await site.ask(app, "count to 20000")
    finally:
        await app.stop()
    assert reply.startswith("done after"), reply
    assert STATE_KEY not in site.saved_state().get("middle_context", {})
    warned = [r.getMessage() for r in caplog.records if r.name == "qwenpaw.copaw_context"]
    assert any('strategy is "scroll"' in text for text in warned), warned
