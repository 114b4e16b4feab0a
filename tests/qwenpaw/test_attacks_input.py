"""Hostile input to copaw-context inside real QwenPaw 1.1 (issue 19): invalid settings beside
agent.json, a provider's "input too long" raised by the model, a symlinked offload folder, a
huge tool output. QwenPaw's own request path; only the model is scripted.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from copaw_context.core.config.files import OVERLAY_NAME
from copaw_context.qwenpaw import CopawContextManager
from copaw_context.testing import ScriptedChatModel, openai_pairing_problems
from tests.qwenpaw.kit import (
    MODEL,
    QwenPawSite,
    agent_calls,
    call_tokens,
    install_plugin,
    load_plugins,
    scripted_agent,
    tool_results,
)
from tests.qwenpaw_attacks import OVERFLOWS, PROVIDER_LIMIT, overflow_once

WINDOW = 20000
LIMIT = PROVIDER_LIMIT  # QwenPaw's window is larger


@pytest.mark.parametrize("provider", sorted(OVERFLOWS))
async def test_a_providers_input_too_long_is_recovered_inside_qwenpaw(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    site = QwenPawSite(qwenpaw_home, f"overflow-{provider}", monkeypatch, window=WINDOW)
    step, raised = overflow_once(scripted_agent(), OVERFLOWS[provider])
    site.model = ScriptedChatModel([step] * 400, model_name=MODEL)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    workspace = await site.start()
    replies = [await site.ask(workspace, f"turn {i}: count to 20000") for i in range(3)]
    await workspace.stop()

    assert raised, "no call went over the provider's limit"
    assert all(r.startswith("done after") for r in replies), replies
    calls = agent_calls(site.model)
    after = calls[[call_tokens(c) for c in calls].index(raised[0]) + 1]
    assert call_tokens(after) <= LIMIT, call_tokens(after)  # compacted, resent
    assert openai_pairing_problems(after.formatted) == []
    state = site.saved_memory()["copaw_context"]["engine"]
    assert state["stats"]["compactions"] >= 1


@pytest.mark.parametrize(
    "overlay",
    ['{"running": {"light_context_config": ', '{"running": {"light_context_config": 5}}'],
)
async def test_invalid_settings_beside_agent_json_name_the_file_and_the_agent_answers(
    qwenpaw_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    overlay: str,
) -> None:
    site = QwenPawSite(qwenpaw_home, "bad-overlay", monkeypatch, window=WINDOW)
    path = site.workspace / OVERLAY_NAME
    path.write_text(overlay, encoding="utf-8")
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    with caplog.at_level(logging.WARNING):
        workspace = await site.start()
        reply = await site.ask(workspace, "turn 0: count to 20000")
        context = await site.ask(workspace, "/context")
    await workspace.stop()
    assert isinstance(workspace.context_manager, CopawContextManager)
    assert reply.startswith("done after"), reply
    said = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert said, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert context.startswith("**Context usage**"), context


async def test_a_symlinked_offload_folder_pointing_outside_is_not_written(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = QwenPawSite(qwenpaw_home, "symlinked", monkeypatch, window=WINDOW)
    outside = tmp_path / "outside"
    outside.mkdir()
    (site.workspace / "tool_results").symlink_to(outside, target_is_directory=True)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    workspace = await site.start()
    replies = [await site.ask(workspace, f"turn {i}: count to 20000") for i in range(2)]
    await workspace.stop()
    assert all(r.startswith("done after") for r in replies), replies
    assert list(outside.iterdir()) == []
    for call in agent_calls(site.model):
        assert call_tokens(call) <= WINDOW


async def test_a_huge_tool_output_is_cut_saved_and_the_reply_comes(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "huge", monkeypatch, window=WINDOW)
    site.model = ScriptedChatModel([scripted_agent("seq 1 1500000")] * 50, model_name=MODEL)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    workspace = await site.start()
    replies = [await site.ask(workspace, f"turn {i}: count") for i in range(2)]
    await workspace.stop()
    assert all(r.startswith("done after") for r in replies), replies
    calls = agent_calls(site.model)
    assert max(call_tokens(c) for c in calls) <= WINDOW
    assert any("<<<TRUNCATED" in r for c in calls for r in tool_results(c))
    saved = list((site.workspace / "tool_results").glob("*.txt"))
    assert saved and any(p.read_text().endswith("\n1500000") for p in saved)
    assert json.dumps(site.saved_memory()).count("1499999") == 0  # not kept in the session
