"""Long-term memory on an AgentScope 1.x ReActAgent: the same engine service as on 2.x."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.message import Msg

from copaw_context.testing import ModelCall, text_step
from tests.agentscope1.helpers import build_agent, settings
from tests.reliability.as1_driver import As1Driver

LESSON = "- Lesson: the parser build needs `make clean` first, or tok stays undeclared."
SUMMARY = (
    "## Goal\nFinish the migration.\n## Constraints & Preferences\n- Never touch prod.yaml.\n"
    "## Progress\n- Checked the early modules.\n## Key Decisions\n- (none)\n"
    "## Next Steps\n- Continue.\n## Critical Context\n- (none)\n"
)


def _system(call: ModelCall) -> str:
    first = call.messages[0] if call.messages else {}
    content = first.get("content", "")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content)
    return str(content)


def answer(kinds: list[str]) -> Any:
    """The agent's own model: replies, summaries and the memory summariser's lessons."""

    def step(call: ModelCall) -> list[Any]:
        system = _system(call)
        if "long-term memory" in system:
            kinds.append("memory")
            return text_step(LESSON)
        if call.tools:
            kinds.append("reply")
            return text_step("on it")
        kinds.append("summary")
        return text_step(SUMMARY)

    return step


async def test_a_compaction_leaves_a_lesson_in_todays_log_and_search_finds_it(
    tmp_path: Path,
) -> None:
    kinds: list[str] = []
    config = settings(window=4000, memory={"summarise_on_compact": True})
    agent, hook, _ = await build_agent(
        tmp_path, [answer(kinds)] * 20, config=config, context_size=4000
    )
    await As1Driver().seed(agent, 8)
    reply = await agent(Msg("user", "Continue the migration.", "user"))
    assert reply.get_text_content() == "on it"
    await hook.close()  # waits for the background summariser
    assert {"summary", "memory", "reply"} <= set(kinds)
    logs = list((tmp_path / "memory").glob("????-??-??.md"))
    assert len(logs) == 1 and "make clean" in logs[0].read_text(encoding="utf-8")

    search = next(f for f in hook.tool_functions() if f.__name__ == "memory_search")
    found = await search(query="make clean")
    text = found.content[0]["text"]
    assert "memory/" in text and "make clean" in text
    archived = await search(query="prod.yaml")
    assert "dialog/" in archived.content[0]["text"], "compacted turns are searchable"


async def test_memory_off_offers_no_memory_tools_and_writes_no_log(tmp_path: Path) -> None:
    kinds: list[str] = []
    config = settings(window=4000, memory={"enabled": False})
    agent, hook, _ = await build_agent(
        tmp_path, [answer(kinds)] * 20, config=config, context_size=4000
    )
    await As1Driver().seed(agent, 8)
    await agent(Msg("user", "Continue the migration.", "user"))
    await hook.close()
    assert "memory" not in kinds and "summary" in kinds
    assert [f.__name__ for f in hook.tool_functions()] == ["read_file"]
    assert not (tmp_path / "memory").exists()


async def test_memory_md_takes_at_most_a_tenth_of_a_small_window(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(
        "## Preferences\n- Answers in French.\n" + "- filler line\n" * 50_000, encoding="utf-8"
    )
    config = settings(window=4000, memory={"summarise_on_compact": False})
    agent, hook, model = await build_agent(
        tmp_path, [text_step("d'accord")], config=config, context_size=4000
    )
    await agent(Msg("user", "hello", "user"))
    system = _system(model.calls[0])
    assert "Answers in French." in system and "<<<TRUNCATED>>>" in system
    assert len(system.encode("utf-8")) < 2000, "about 4000 x 0.4 bytes, not 16000"
    await hook.close()
