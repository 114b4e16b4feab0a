"""Without a DSN the memory files reach storage through the workspace's file store (issue 20):
a real AgentScope 2.x agent whose engine's file store counts its calls. ``memory_edit`` puts
MEMORY.md by ``put_document`` (its version read by ``get_document``), the summariser's
lesson is appended to today's log by ``append_text``, and a consolidation reads and puts
MEMORY.md and its record ``memory/.consolidated.json`` the same way, and ``/clear`` appends
the summary it removes to ``dialog/summaries/`` by ``append_text``; every file holds the
bytes the file code wrote (known content), under the same lock files."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import UserMsg

from copaw_context import MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.store.select import STORE_ENV
from copaw_context.testing import (
    CountingStore,
    ModelCall,
    ScriptedChatModel,
    text_step,
    tool_calls_step,
)
from tests.agent_history import seeded_history
from tests.helpers import make_agent, six_section_summary

LESSON = "- Lesson: the parser build needs `make clean` first, or tok stays undeclared."
MEMORY_AFTER_EDIT = "## Preferences\n\n- Answers in French.\n"  # what the file code wrote


def _config() -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": 4000,
                "light_context_config": {"token_counter": "o200k_base", "compactor": "llm"},
            }
        }
    )


def _compactor(call: ModelCall) -> list[Any]:
    system = call.messages[0].get_text_content() or ""
    if "long-term memory" in system:
        return text_step(LESSON)
    return text_step(six_section_summary(2))


async def test_memory_edit_the_log_and_a_consolidation_go_through_the_file_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    compactor = ScriptedChatModel([_compactor] * 10)
    async with MemoryCompactionHook(_config(), ws, compactor_model=compactor) as hook:
        ctx = hook.engine.context
        assert ctx.blobs is None  # no DSN: no shared store
        store = CountingStore(ws)
        ctx.workspace_store = store  # the memory files too, from here on
        model = ScriptedChatModel(
            [
                tool_calls_step(
                    ("memory_edit", {"section": "Preferences", "content": "- Answers in French."})
                ),
                text_step("Noted."),
                text_step("ok"),
            ],
            context_size=4000,
        )
        agent = await make_agent(hook, model)
        reply = await agent.reply(UserMsg("user", "Remember that I want answers in French."))
        assert reply.get_text_content() == "Noted."

        # memory_edit: read by get_document, put by put_document; the file code's bytes.
        assert (ws / "MEMORY.md").read_text(encoding="utf-8") == MEMORY_AFTER_EDIT
        assert store.keys["put_document"] == ["MEMORY.md"]
        assert "MEMORY.md" in store.keys["get_document"]
        assert not (ws / "memory" / "backups").exists()  # there was no old text to keep

        # A compaction: the summariser appends its lesson to today's log through the store.
        agent.state.context = seeded_history(8)
        await agent.reply(UserMsg("user", "what next?"))
        await hook.engine.memory.close()  # waits for the background summariser
        (log,) = (ws / "memory").glob("????-??-??.md")
        day = log.stem
        assert store.keys["append_text"] == [f"memory/{day}.md"]
        text = log.read_text(encoding="utf-8")
        pattern = (
            rf"# {day}\n\n- \d\d:\d\d \[summariser\] Lesson: the parser build needs "
            r"`make clean` first, or tok stays undeclared\.\n"
        )
        assert re.fullmatch(pattern, text), text

        # A consolidation (extractive): MEMORY.md and its record through the store.
        puts = len(store.keys["put_document"])
        result = await hook.engine.memory.consolidator().consolidate()
        assert result.written and result.method == "extractive"
        assert store.keys["put_document"][puts:] == ["MEMORY.md", "memory/.consolidated.json"]
        assert "memory/.consolidated.json" in store.keys["get_document"]
        assert "memory" in store.keys["list_texts"]  # the daily logs listed through the store
        assert (ws / "MEMORY.md").read_text(encoding="utf-8") == (
            MEMORY_AFTER_EDIT + f"\n## Notes from {day}\n\n"
            "- Lesson: the parser build needs `make clean` first, or tok stays undeclared.\n"
        )
        (backup,) = (ws / "memory" / "backups").glob("MEMORY.*.md")
        assert result.backup == backup and backup.read_text("utf-8") == MEMORY_AFTER_EDIT
        raw = (ws / "memory" / ".consolidated.json").read_bytes()
        record = json.loads(raw)
        data = log.read_bytes()
        assert record["logs"][day]["bytes"] == len(data)
        assert record["logs"][day]["tail"] == hashlib.sha1(data[-64:]).hexdigest()
        assert raw == (json.dumps(record, indent=1, sort_keys=True) + "\n").encode()
        assert set(record) == {"version", "last_run", "logs"} and record["version"] == 1

        # A second run finds nothing new: the record read back through the store.
        again = await hook.engine.memory.consolidator().consolidate()
        assert not again.written and again.entries == 0

        # /clear keeps the summary it removes for recall: appended through the store too.
        assert agent.state.summary
        await agent.reply(UserMsg("user", "/clear"))
        (kept,) = (ws / "dialog" / "summaries").glob("????-??-??.md")
        assert store.keys["append_text"][-1] == f"dialog/summaries/{kept.name}"
        entry = kept.read_text(encoding="utf-8")
        assert entry.startswith("# /clear · ") and "## Goal" in entry and entry.endswith("\n\n")
        assert (ws / "dialog" / "summaries" / ".lock").is_file()  # the lock the file code took
    locks = sorted(p.name for p in (ws / "memory" / ".locks").iterdir())
    assert locks == sorted(["MEMORY.md.lock", f"{day}.md.lock", "consolidate.lock"])
