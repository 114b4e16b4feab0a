"""The README's 1.x attach example works as pasted, with a QwenPaw-style workspace."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from copaw_context.testing import ScriptedChatModel, text_step, tool_calls_step

README = Path(__file__).resolve().parents[2] / "README.md"


def attach_example() -> str:
    section = README.read_text(encoding="utf-8").split("## Attach it to an AgentScope 1.x", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the README's 1.x attach section has no python example"
    return match.group(1)


async def test_the_1x_attach_example_runs_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    workspace = tmp_path / ".qwenpaw" / "workspaces" / "a1"
    workspace.mkdir(parents=True)
    (workspace / "agent.json").write_text('{"running": {}}', encoding="utf-8")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "app.log").write_text("error: linker failed\n", encoding="utf-8")
    model = ScriptedChatModel(
        [tool_calls_step(("build_log", {"target": "app"})), text_step("The linker failed.")]
    )
    namespace: dict[str, object] = {"model": model, "formatter": model.formatter}
    body = textwrap.indent(attach_example(), "    ")
    exec(f"async def example():\n{body}\n    return reply, agent, hook\n", namespace)
    reply, agent, hook = await namespace["example"]()  # type: ignore[operator]
    assert reply.get_text_content() == "The linker failed."  # type: ignore[attr-defined]
    assert hook.workspace == workspace  # type: ignore[attr-defined]
    results = [
        block
        for msg, _ in agent.memory.content  # type: ignore[attr-defined]
        for block in msg.content
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    assert len(results) == 1 and "linker failed" in str(results[0]["output"])
    assert "read_file" in model.calls[0].tool_names
    model.assert_complete()
    assert hook.closed  # type: ignore[attr-defined]
