"""Long-term memory through the engine, on a real AgentScope 2.x agent (issue: memory)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.message import ToolResultBlock, UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step, tool_calls_step
from tests.agent_history import seeded_history
from tests.helpers import make_agent, six_section_summary

LESSON = "- Lesson: the parser build needs `make clean` first, or tok stays undeclared."


def config(window: int = 4000, compactor: str = "llm", **memory: Any) -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "memory": memory,
                "light_context_config": {"token_counter": "o200k_base", "compactor": compactor},
            }
        }
    )


def summariser(kind_log: list[str]) -> Any:
    """A compactor model that writes summaries and answers the memory summariser."""

    def answer(call: ModelCall) -> list[Any]:
        system = call.messages[0].get_text_content() or ""
        if "long-term memory" in system:
            kind_log.append("memory")
            return text_step(LESSON)
        kind_log.append("summary")
        return text_step(six_section_summary(2))

    return answer


async def test_a_compaction_leaves_a_lesson_in_todays_log(tmp_path: Path) -> None:
    calls: list[str] = []
    compactor = ScriptedChatModel([summariser(calls)] * 10)
    hook = MemoryCompactionHook(config(), tmp_path, compactor_model=compactor)
    agent = await make_agent(hook, ScriptedChatModel([text_step("ok")], context_size=4000))
    agent.state.context = seeded_history(8)
    await agent.reply(UserMsg("user", "what next?"))
    await hook.close()  # waits for the background summariser
    assert "memory" in calls and "summary" in calls
    logs = list((tmp_path / "memory").glob("????-??-??.md"))
    assert len(logs) == 1 and "make clean" in logs[0].read_text(encoding="utf-8")


async def test_a_failing_summariser_harms_nothing_and_writes_the_extractive_entries(
    tmp_path: Path,
) -> None:
    def silent_then_fail(call: ModelCall) -> list[Any]:
        system = call.messages[0].get_text_content() or ""
        if "long-term memory" in system:
            raise RuntimeError("summariser provider down")
        return text_step(six_section_summary(2))

    events: list[ContextEvent] = []
    compactor = ScriptedChatModel([silent_then_fail] * 10)
    hook = MemoryCompactionHook(
        config(), tmp_path, compactor_model=compactor, on_event=events.append
    )
    agent = await make_agent(hook, ScriptedChatModel([text_step("ok")], context_size=4000))
    agent.state.context = seeded_history(8)
    reply = await agent.reply(UserMsg("user", "what next?"))
    await hook.close()
    assert reply.get_text_content() == "ok"
    assert [e.kind for e in events if e.kind == "compaction"] == ["compaction"]
    # The failed summariser falls back to the extractive entries: the user's constraint.
    (log,) = (tmp_path / "memory").glob("????-??-??.md")
    assert "[summariser] Never touch prod.yaml" in log.read_text(encoding="utf-8")


async def test_memory_search_finds_what_left_the_context(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(compactor="extractive"), tmp_path)
    model = ScriptedChatModel(
        [
            tool_calls_step(("memory_search", {"query": "prod.yaml"})),
            text_step("found it"),
        ],
        context_size=4000,
    )
    agent = await make_agent(hook, model)
    agent.state.context = seeded_history(8)
    await agent.reply(UserMsg("user", "/compact"))
    await agent.reply(UserMsg("user", "what did I say about prod.yaml?"))
    result = next(
        b for m in model.calls[1].messages for b in m.content if isinstance(b, ToolResultBlock)
    )
    text = result.output if isinstance(result.output, str) else result.output[0].text
    assert "dialog/" in text and "line" in text and "prod.yaml" in text


async def test_memory_md_is_in_the_system_prompt_bounded(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(
        "## Preferences\n- Answers in French.\n" + "- filler line\n" * 5000, encoding="utf-8"
    )
    hook = MemoryCompactionHook(config(200_000, memory_prompt_max_bytes=4000), tmp_path)
    model = ScriptedChatModel([text_step("d'accord")], context_size=200_000)
    agent = await make_agent(hook, model)
    await agent.reply(UserMsg("user", "hello"))
    system = model.calls[0].messages[0].get_text_content() or ""
    assert "Answers in French." in system and "<<<TRUNCATED>>>" in system
    assert len(system.encode("utf-8")) < 6000


async def test_clear_hands_the_messages_to_the_summariser(tmp_path: Path) -> None:
    calls: list[str] = []
    compactor = ScriptedChatModel([summariser(calls)] * 10)
    hook = MemoryCompactionHook(config(200_000), tmp_path, compactor_model=compactor)
    agent = await make_agent(hook, ScriptedChatModel([text_step("ok")], context_size=200_000))
    agent.state.context = seeded_history(2)
    await agent.reply(UserMsg("user", "/clear"))
    await hook.close()
    assert calls == ["memory"]
    assert list((tmp_path / "memory").glob("????-??-??.md"))


async def test_the_recall_index_takes_in_a_compaction_without_a_search(tmp_path: Path) -> None:
    hook = MemoryCompactionHook(config(compactor="extractive"), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel([text_step("ok")], context_size=4000))
    agent.state.context = seeded_history(8)
    await agent.reply(UserMsg("user", "/compact"))
    await hook.close()  # waits for the background index update
    index = hook.engine.memory.tools.index
    hits = await index.search("prod.yaml", refresh=False)
    assert hits and any(hit.path.startswith("dialog/") for hit in hits)


async def test_memory_md_takes_at_most_a_tenth_of_a_small_window(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(
        "## Preferences\n- Answers in French.\n" + "- filler line\n" * 50_000, encoding="utf-8"
    )
    hook = MemoryCompactionHook(config(4000), tmp_path)  # memory_prompt_max_bytes: 16000
    model = ScriptedChatModel([text_step("d'accord")], context_size=4000)
    agent = await make_agent(hook, model)
    await agent.reply(UserMsg("user", "hello"))
    system = model.calls[0].messages[0].get_text_content() or ""
    assert "Answers in French." in system and "<<<TRUNCATED>>>" in system
    assert len(system.encode("utf-8")) < 2000, "about 4000 x 0.4 bytes, not 16000"
