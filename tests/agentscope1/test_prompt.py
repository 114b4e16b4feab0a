"""MEMORY.md in a 1.x agent's system prompt, without touching what the agent saves."""

from __future__ import annotations

from pathlib import Path

from agentscope.agent import ReActAgent
from agentscope.message import Msg
from agentscope.tool import Toolkit

from copaw_context.agentscope1 import MemoryCompactionHook
from copaw_context.testing import ScriptedChatModel, text_step
from tests.agentscope1.helpers import build_agent, settings

MEMORY = "# MEMORY\n\n## Preferences\n- The user wants answers in bullet points.\n"


def _system(call_formatted: list[dict[str, object]]) -> str:
    first = call_formatted[0]
    assert first["role"] == "system"
    content = first["content"]
    return "\n".join(p["text"] for p in content) if isinstance(content, list) else str(content)


async def test_memory_md_follows_the_system_prompt(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    agent, hook, model = await build_agent(tmp_path, [text_step("ok"), text_step("ok again")])
    saved = agent.state_dict()
    await agent(Msg("user", "hi", "user"))
    system = _system(model.calls[0].formatted)
    assert system.startswith("You are a careful assistant.\n\n# Long-term memory (MEMORY.md)")
    assert "- The user wants answers in bullet points." in system
    assert agent.sys_prompt == "You are a careful assistant."
    assert agent.state_dict()["_sys_prompt"] == saved["_sys_prompt"], "nothing saved changes"
    report = await hook.report(agent)
    assert report.system > 20, "the count includes MEMORY.md"

    (tmp_path / "MEMORY.md").write_text(MEMORY + "- Uses vim.\n", encoding="utf-8")
    await agent(Msg("user", "and now?", "user"))
    assert "- Uses vim." in _system(model.calls[1].formatted), "read at every call"


async def test_a_prompt_that_already_holds_memory_md_gets_it_once(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    prompt = f"You are QwenPaw.\n\n{MEMORY}"  # QwenPaw builds its prompt from the workspace
    agent, _, model = await build_agent(tmp_path, [text_step("ok")], sys_prompt=prompt)
    await agent(Msg("user", "hi", "user"))
    assert _system(model.calls[0].formatted).count("bullet points") == 1


async def test_memory_off_leaves_the_prompt_alone(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    config = settings(memory={"enabled": False})
    agent, _, model = await build_agent(tmp_path, [text_step("ok")], config=config)
    await agent(Msg("user", "hi", "user"))
    assert _system(model.calls[0].formatted) == "You are a careful assistant."
    assert model.calls[0].tool_names == ["read_file"]


async def test_agents_sharing_one_formatter_each_get_their_own_memory_md(tmp_path: Path) -> None:
    """One formatter object given to two agents (a common 1.x setup): each agent's prompt
    carries its own workspace's MEMORY.md, not the one attached last."""
    agents, models = [], []
    shared = ScriptedChatModel([]).formatter
    for name in ("alpha", "beta"):
        workspace = tmp_path / name
        workspace.mkdir()
        (workspace / "MEMORY.md").write_text(f"# MEMORY\n\n- Project {name}.\n", "utf-8")
        model = ScriptedChatModel([text_step("ok")], context_size=200_000)
        agent = ReActAgent(
            name=name, sys_prompt="You help.", model=model, formatter=shared, toolkit=Toolkit()
        )
        agent.set_console_output_enabled(False)
        await MemoryCompactionHook(settings(), workspace).attach(agent)
        agents.append(agent)
        models.append(model)
    for agent in agents:
        await agent(Msg("user", "hi", "user"))
    alpha, beta = (_system(model.calls[0].formatted) for model in models)
    assert "- Project alpha." in alpha and "beta" not in alpha
    assert "- Project beta." in beta and "alpha" not in beta
