"""What the 1.x adapter relies on in AgentScope 1.x beyond its documented API.

Each test fails loudly, naming the installed AgentScope version, when a release changes one
of these, so the adapter is fixed before users see wrong behaviour.
"""

from __future__ import annotations

from pathlib import Path

import agentscope
from agentscope.memory import InMemoryMemory
from agentscope.message import Msg

from copaw_context.agentscope1.session import HIDDEN_MARKS
from copaw_context.testing import text_step, tool_calls_step
from tests.agentscope1.helpers import build_agent

VERSION = f"AgentScope {agentscope.__version__}"


def test_chat_usage_lives_where_the_scripted_model_imports_it() -> None:
    from agentscope.model import ChatResponse
    from agentscope.model._model_usage import ChatUsage

    usage = ChatUsage(input_tokens=3, output_tokens=1, time=0.0)
    assert ChatResponse(content=[], usage=usage).usage is usage, VERSION


def test_the_memory_marks_we_leave_alone_are_agentscopes() -> None:
    from agentscope.agent._react_agent import _MemoryMark

    values = {mark.value for mark in _MemoryMark}
    assert values == HIDDEN_MARKS, f"{VERSION}: ReActAgent's memory marks are now {values}"


async def test_the_memory_stores_pairs_and_prepends_the_summary() -> None:
    memory = InMemoryMemory()
    await memory.add(Msg("user", "hi", "user"), marks="hint")
    assert isinstance(memory.content, list), VERSION
    msg, marks = memory.content[0]
    assert isinstance(msg, Msg) and marks == ["hint"], f"{VERSION}: memory.content changed"
    await memory.update_compressed_summary("the summary")
    first = (await memory.get_memory(prepend_summary=True))[0]
    assert (first.role, first.content) == ("user", "the summary"), VERSION
    assert len(await memory.get_memory(prepend_summary=False)) == 1, VERSION


async def test_acting_stores_the_result_before_post_acting_runs(tmp_path: Path) -> None:
    def probe(query: str) -> str:
        """Probe.

        Args:
            query (`str`): A query.
        """
        return "probed"

    seen: list[tuple[str, list[str]]] = []
    agent, _, _ = await build_agent(
        tmp_path, [tool_calls_step(("probe", {"query": "x"})), text_step("done")], [probe]
    )

    def after(agent: object, kwargs: dict[str, object], output: object) -> None:
        last = agent.memory.content[-1][0]  # type: ignore[attr-defined]
        seen.append((last.role, [b.get("type") for b in last.content]))

    agent.register_instance_hook("post_acting", "pin", after)
    await agent(Msg("user", "go", "user"))
    assert seen == [("system", ["tool_result"])], f"{VERSION}: _acting stores results differently"


async def test_our_recovery_formats_the_prompt_as_reasoning_does(tmp_path: Path) -> None:
    agent, _, model = await build_agent(tmp_path, [text_step("ok")])
    await agent(Msg("user", "hello", "user"))
    again = await agent.formatter.format(
        [Msg("system", agent.sys_prompt, "system"), *await agent.memory.get_memory()]
    )
    sent = model.calls[0].formatted
    assert again[: len(sent)] == sent, f"{VERSION}: _reasoning builds its prompt differently"


def test_agentscopes_logger_is_the_one_the_thinking_probe_quietens() -> None:
    from agentscope._logging import logger

    assert logger.name == "as", f"{VERSION}: AgentScope logs to {logger.name!r} now"


async def test_the_reply_after_max_iters_goes_through_summarizing(tmp_path: Path) -> None:
    agent, _, model = await build_agent(
        tmp_path, [tool_calls_step(("read_file", {"file_path": "x.txt"})), text_step("gave up")]
    )
    agent.max_iters = 1
    called: list[str] = []
    wrapped = agent._summarizing

    async def spy() -> Msg:
        called.append("summarizing")
        return await wrapped()  # type: ignore[no-any-return]

    agent._summarizing = spy
    reply = await agent(Msg("user", "go", "user"))
    assert called == ["summarizing"], f"{VERSION}: the reply after max_iters changed"
    assert reply.get_text_content() == "gave up" and len(model.calls) == 2, VERSION
