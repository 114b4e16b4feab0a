"""Attacks on copaw-context inside real QwenPaw 1.1 (issue 19): the compactor down, several
sessions at once, a provider's "input too long" raised by the model.

Each runs QwenPaw's own request path (``Workspace`` + ``AgentRunner.query_handler``) with the
plugin installed; only the model is scripted.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.config.files import OVERLAY_NAME
from copaw_context.testing import ScriptedChatModel
from tests.qwenpaw.kit import (
    MODEL,
    QwenPawSite,
    archive_lines,
    install_plugin,
    load_plugins,
    scripted_agent,
)
from tests.qwenpaw_attacks import (
    assert_inputs_fit,
    compactor_hangs,
    compactor_junk,
    compactor_raises,
    tagged_summary,
    with_compactor,
)

WINDOW = 20000


def _held_ids(site: QwenPawSite, session: str = "s1") -> tuple[set[str], list[dict[str, Any]]]:
    """Ids of the messages in the saved context or the archive; the archive lines."""
    lines = archive_lines(site.workspace)
    context = [m for m, _marks in site.saved_memory(session)["content"]]
    return {m["id"] for m in context} | {line["message"]["id"] for line in lines}, lines


@pytest.mark.parametrize("failure", ["raises", "junk", "hangs"])
async def test_a_compactor_that_is_down_still_lets_the_reply_come_and_loses_nothing(
    qwenpaw_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: str,
) -> None:
    site = QwenPawSite(qwenpaw_home, f"down-{failure}", monkeypatch, window=WINDOW)
    answer = {"raises": compactor_raises, "junk": compactor_junk, "hangs": compactor_hangs}[failure]
    site.model = ScriptedChatModel(
        [with_compactor(scripted_agent(), answer)] * 400, model_name=MODEL
    )
    overlay = {"running": {"light_context_config": {"compactor_timeout_seconds": 0.05}}}
    (site.workspace / OVERLAY_NAME).write_text(json.dumps(overlay), encoding="utf-8")
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    workspace = await site.start()
    with caplog.at_level(logging.WARNING, logger="copaw_context"):
        replies = [await site.ask(workspace, f"turn {i}: count to 20000") for i in range(3)]
        compact = await site.ask(workspace, "/compact")
    await workspace.stop()

    assert all(r.startswith("done after") for r in replies), replies
    assert compact.startswith("**Compact Complete!**"), compact  # the extractive summary
    assert any("LLM compaction failed" in r.getMessage() for r in caplog.records)
    state = site.saved_memory()["copaw_context"]["engine"]
    assert state["stats"]["compactions"] >= 2
    held, lines = _held_ids(site)
    assert lines and set(site.sent_ids) - {site.sent_ids[-1]} <= held  # all but /compact
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
    workspace = await site.start()
    sessions = ["pa", "pb", "pc"]
    for i in range(3):  # different sessions at once, then the same session twice at once
        await asyncio.gather(
            *(site.ask(workspace, f"tag-{s} turn {i}: count to 20000", s) for s in sessions)
        )
    same = await asyncio.gather(
        *(site.ask(workspace, f"tag-pa again {i}: count to 20000", "pa") for i in range(2))
    )
    await asyncio.gather(*(site.ask(workspace, "/compact", s) for s in sessions))
    await workspace.stop()

    assert all(r.startswith("done after") for r in same), same
    lines = archive_lines(site.workspace)
    ids = set()
    for session in sessions:
        memory = site.saved_memory(session)
        ours = memory["copaw_context"]
        ids.add(ours["session_id"])
        assert f"tag-{session}" in memory["_compressed_summary"], memory["_compressed_summary"]
        others = [f"tag-{s}" for s in sessions if s != session]
        assert not any(tag in memory["_compressed_summary"] for tag in others), session
        assert not any(tag in json.dumps(memory["content"]) for tag in others), session
        archived = [line for line in lines if line["session_id"] == ours["session_id"]]
        assert archived and not any(tag in json.dumps(archived) for tag in others), session
        assert ours["engine"]["stats"]["compactions"] >= 2
    assert len(ids) == len(sessions)
    assert {line["session_id"] for line in lines} == ids


async def test_a_failed_compaction_keeps_the_summary_qwenpaw_holds(
    qwenpaw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ported from QwenPaw's ``test_pre_reasoning_preserves_history_on_safe_reduction``
    (tests/unit/agents/context/test_light_context_manager.py): when the summary cannot be
    made, the summary already held is not lost (QwenPaw's keeps the history; ours archives
    it and carries the held summary over into the extractive one)."""
    site = QwenPawSite(qwenpaw_home, "keeps-summary", monkeypatch, window=WINDOW)
    install_plugin(qwenpaw_home)
    await load_plugins(qwenpaw_home)
    workspace = await site.start()
    for i in range(3):
        await site.ask(workspace, f"turn {i}: count to 20000")
    held = site.saved_memory()["_compressed_summary"]
    assert "PARSE-17" in held
    site.model = ScriptedChatModel(
        [with_compactor(scripted_agent(), compactor_raises)] * 400, model_name=MODEL
    )
    replies = [await site.ask(workspace, f"turn {i}: count to 20000") for i in (3, 4)]
    compact = await site.ask(workspace, "/compact")
    await workspace.stop()
    assert all(r.startswith("done after") for r in replies), replies
    assert compact.startswith("**Compact Complete!**"), compact
    memory = site.saved_memory()
    assert "PARSE-17" in memory["_compressed_summary"]  # the held summary carried over
    ids, _lines = _held_ids(site, "s1")
    assert set(site.sent_ids) - {site.sent_ids[-1]} <= ids
