"""A QwenPaw 1.1.12 workspace taken over by the 1.x adapter: nothing of it is lost or
rewritten, and what QwenPaw archived stays reachable (the path guide, memory_search)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from agentscope.agent import ReActAgent
from agentscope.message import Msg

from copaw_context.agentscope1 import MemoryCompactionHook
from copaw_context.core.archive.store import read_archive
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step
from tests.reliability.as1_driver import As1Driver
from tests.summaries import PREVIOUS_SUMMARY

AGENT_JSON = {
    "id": "a1",
    "name": "Default Agent",
    "language": "en",
    "running": {
        "max_iters": 100,
        "max_input_length": 4000,
        "context_manager_backend": "light",
        "memory_manager_backend": "remelight",
        "light_context_config": {
            "dialog_path": "dialog",
            "context_compact_config": {"compact_threshold_ratio": 0.8},
            "tool_result_pruning_config": {"tool_results_cache": "tool_result"},
        },
        "reme_light_memory_config": {"summarize_when_compact": False},
    },
}
LEGACY_SUMMARY = (
    "# Summary of previous conversation\nHere is the summary:\n## Goal\n- Migrate the "
    "billing service to Postgres 16\n\nThe above is a summary of previous conversation"
)


def _qwenpaw_line(text: str, when: str) -> str:
    """A line as QwenPaw's SaveDialog writes it: ``Msg.to_dict()``, no session id."""
    msg = Msg("user", text, "user", timestamp=when)
    return json.dumps(msg.to_dict(), ensure_ascii=False) + "\n"


async def test_a_qwenpaw_workspace_carries_over(tmp_path: Path) -> None:
    workspace = tmp_path / ".qwenpaw" / "workspaces" / "a1"
    (workspace / "dialog").mkdir(parents=True)
    (workspace / "agent.json").write_text(json.dumps(AGENT_JSON), encoding="utf-8")
    old = workspace / "dialog" / "2026-11-30.jsonl"
    old.write_text(
        _qwenpaw_line("Our staging database is called ORCHID-7.", "2026-11-30 09:00:00.000")
        + _qwenpaw_line("Deploy on Tuesdays only.", "2026-11-30 09:05:00.000"),
        encoding="utf-8",
    )
    today = workspace / "dialog" / f"{datetime.now():%Y-%m-%d}.jsonl"
    qwenpaw_today = _qwenpaw_line("Earlier today, before the switch.", f"{datetime.now()}"[:23])
    today.write_text(qwenpaw_today, encoding="utf-8")
    before_old = old.read_bytes()

    hook = MemoryCompactionHook.from_agent_json(workspace / "agent.json")
    assert hook.workspace == workspace.resolve()

    def assistant(call: ModelCall) -> list[Any]:  # the compactor too: the agent's own model
        return text_step("on it" if call.tools else PREVIOUS_SUMMARY)

    model = ScriptedChatModel([assistant] * 20, context_size=4000)
    agent = ReActAgent(name="Default Agent", sys_prompt="s", model=model, formatter=model.formatter)
    agent.set_console_output_enabled(False)
    await hook.attach(agent)
    await agent.memory.update_compressed_summary(LEGACY_SUMMARY)  # QwenPaw's own summary
    await As1Driver().seed(agent, 8)
    reply = await agent(Msg("user", "Continue the migration.", "user"))
    assert reply.get_text_content() == "on it"

    assert old.read_bytes() == before_old, "QwenPaw's archive is never rewritten"
    assert today.read_text(encoding="utf-8").startswith(qwenpaw_today)
    ours = [r for r in read_archive(today) if "form" in r]
    assert ours and all(r["form"] == "agentscope1.Msg" for r in ours)
    assert all(Msg.from_dict(r["message"]).id == r["message"]["id"] for r in ours)
    summary = (await agent.memory.get_memory())[0].get_text_content() or ""
    assert "- dialog/2026-11-30.jsonl (2 lines)" in summary, "the guide counts QwenPaw's lines"
    lines = len(today.read_text(encoding="utf-8").splitlines())
    assert f"- dialog/{today.name} ({lines} lines)" in summary
    assert summary.count("## Goal") == 1, "merged, not nested"
    assert "Postgres 16" in summary and "PARSE-17" in summary

    search = next(f for f in hook.tool_functions() if f.__name__ == "memory_search")
    found = await search(query="ORCHID-7")
    text = found.content[0]["text"]
    assert "dialog/2026-11-30.jsonl" in text and "ORCHID-7" in text
