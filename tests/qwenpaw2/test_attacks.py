"""Attacks on copaw-context inside real QwenPaw 2.2 (issue 19): the compactor down, several
sessions at once, a provider's "input too long" raised by the model, invalid settings beside
agent.json. QwenPaw's own request path (``Workspace.stream_query``); only the model is
scripted.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.config.files import OVERLAY_NAME
from copaw_context.qwenpaw2 import STATE_KEY
from copaw_context.testing import ScriptedChatModel, openai_pairing_problems
from tests.qwenpaw2.kit import (
    MODEL,
    QwenPawSite,
    agent_calls,
    archive_lines,
    call_tokens,
    install_plugin,
    load_plugins,
    scripted_agent,
)
from tests.qwenpaw_attacks import (
    OVERFLOWS,
    PROVIDER_LIMIT,
    assert_inputs_fit,
    compactor_hangs,
    compactor_raises,
    overflow_once,
    tagged_summary,
    with_compactor,
)

WINDOW = 20000
LIMIT = PROVIDER_LIMIT


def _texts(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages)


@pytest.mark.parametrize("failure", ["raises", "hangs"])
async def test_a_compactor_that_is_down_still_lets_the_reply_come_and_loses_nothing(
    qwenpaw_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: str,
) -> None:
    site = QwenPawSite(qwenpaw_home, f"down-{failure}", monkeypatch, window=WINDOW)
    answer = {"raises": compactor_raises, "hangs": compactor_hangs}[failure]
    site.model = ScriptedChatModel(
        [with_compactor(scripted_agent(), answer)] * 400, model_name=MODEL
    )
    overlay = {"running": {"light_context_config": {"compactor_timeout_seconds": 0.05}}}
    (site.workspace / OVERLAY_NAME).write_text(json.dumps(overlay), encoding="utf-8")
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    app = await site.start()
    try:
        with caplog.at_level(logging.WARNING, logger="copaw_context"):
            replies = [await site.ask(app, f"turn {i}: count to 20000") for i in range(3)]
            compact = await site.ask(app, "/compact")
    finally:
        await app.stop()

    assert all(r.startswith("done after") for r in replies), replies
    assert compact.startswith("**Compact Complete!**"), compact  # the extractive summary
    assert any("LLM compaction failed" in r.getMessage() for r in caplog.records)
    state = site.saved_state()
    assert state["middle_context"][STATE_KEY]["stats"]["compactions"] >= 2
    held = _texts([*state["context"], *(line["message"] for line in archive_lines(site.workspace))])
    assert all(f"turn {i}: count to 20000" in held for i in range(3))
    assert_inputs_fit(site.model, WINDOW)


async def test_sessions_in_parallel_keep_their_own_summaries_state_and_archive(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = QwenPawSite(qwenpaw_home, "parallel", monkeypatch, window=WINDOW)
    site.model = ScriptedChatModel(
        [with_compactor(scripted_agent(), tagged_summary)] * 400, model_name=MODEL
    )
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    app = await site.start()
    sessions = ["pa", "pb", "pc"]
    try:
        for i in range(3):
            await asyncio.gather(
                *(site.ask(app, f"tag-{s} turn {i}: count to 20000", s) for s in sessions)
            )
        same = await asyncio.gather(
            *(site.ask(app, f"tag-pa again {i}: count to 20000", "pa") for i in range(2))
        )
        await asyncio.gather(*(site.ask(app, "/compact", s) for s in sessions))
    finally:
        await app.stop()

    assert all(r for r in same), same
    lines = archive_lines(site.workspace)
    ids = set()
    for session in sessions:
        state = site.saved_state(session)
        ids.add(state["session_id"])
        others = [f"tag-{s}" for s in sessions if s != session]
        assert f"tag-{session}" in state["summary"], state["summary"]
        assert not any(tag in state["summary"] for tag in others), session
        assert not any(tag in json.dumps(state["context"]) for tag in others), session
        archived = [line for line in lines if line["session_id"] == state["session_id"]]
        assert archived and not any(tag in json.dumps(archived) for tag in others), session
        assert state["middle_context"][STATE_KEY]["stats"]["compactions"] >= 1
    assert len(ids) == len(sessions)
    assert {line["session_id"] for line in lines} == ids


@pytest.mark.parametrize("provider", sorted(OVERFLOWS))
async def test_a_providers_input_too_long_is_recovered_inside_qwenpaw(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    site = QwenPawSite(qwenpaw_home, f"overflow-{provider}", monkeypatch, window=WINDOW)
    step, raised = overflow_once(scripted_agent(), OVERFLOWS[provider])
    site.model = ScriptedChatModel([step] * 400, model_name=MODEL)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    app = await site.start()
    try:
        replies = [await site.ask(app, f"turn {i}: count to 20000") for i in range(3)]
    finally:
        await app.stop()
    assert raised, "no call went over the provider's limit"
    assert all(r.startswith("done after") for r in replies), replies
    calls = agent_calls(site.model)
    after = calls[[call_tokens(c) for c in calls].index(raised[0]) + 1]
    assert call_tokens(after) <= LIMIT, call_tokens(after)
    assert openai_pairing_problems(after.formatted) == []


@pytest.mark.parametrize("overlay", ['{"running": ', '{"running": {"light_context_config": 5}}'])
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
    app = await site.start()
    try:
        with caplog.at_level(logging.WARNING):
            reply = await site.ask(app, "turn 0: count to 20000")
            context = await site.ask(app, "/context")
    finally:
        await app.stop()
    assert reply.startswith("done after"), reply
    assert any(str(path) in r.getMessage() for r in caplog.records)
    assert context.startswith("**Context usage**"), context  # copaw-context runs
