"""The README's attach example works as pasted (defects issue, item 18)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from copaw_context.testing import ScriptedChatModel, text_step, tool_calls_step

README = Path(__file__).resolve().parent.parent / "README.md"


def attach_example() -> str:
    section = README.read_text(encoding="utf-8").split("## Attach it to an agent", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the README's attach section has no python example"
    return match.group(1)


async def test_the_attach_example_runs_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "agent.json").write_text('{"running": {}}', encoding="utf-8")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "app.log").write_text("error: linker failed\n", encoding="utf-8")
    model = ScriptedChatModel(
        [tool_calls_step(("build_log", {"target": "app"})), text_step("The linker failed.")]
    )
    namespace: dict[str, object] = {"model": model}
    body = textwrap.indent(attach_example(), "    ")
    exec(f"async def example():\n{body}\n    return reply, agent, hook\n", namespace)
    reply, agent, hook = await namespace["example"]()  # type: ignore[operator]
    assert reply.get_text_content() == "The linker failed."  # type: ignore[attr-defined]
    results = [
        b
        for m in agent.state.context
        for b in m.content
        if b.type == "tool_result"  # type: ignore[attr-defined]
    ]
    assert len(results) == 1 and "linker failed" in str(results[0].output)
    model.assert_complete()
    assert hook.closed  # type: ignore[attr-defined]
