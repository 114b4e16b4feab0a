"""One copaw-context hook per agent, the same on both majors (found from outside: AgentScope
2.x accepted a second, different hook, so two pipelines ran over one context and both
workspaces' MEMORY.md went into the prompt)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from copaw_context.core.config.running import parse_running_config
from tests.reliability.drivers import HostDriver

__all__ = ["test_a_second_hook_on_one_agent_is_refused"]


async def test_a_second_hook_on_one_agent_is_refused(driver: HostDriver, tmp_path: Path) -> None:
    config = parse_running_config(
        {"running": {"max_input_length": 8000, "light_context_config": {"compactor": "extractive"}}}
    )
    first, second = tmp_path / "one", tmp_path / "two"
    for workspace, mark in ((first, "FROM-ONE"), (second, "FROM-TWO")):
        workspace.mkdir()
        (workspace / "MEMORY.md").write_text(f"# Memory\n\n## Facts\n- {mark}\n", encoding="utf-8")
    hook = driver.hook(config, first)
    other = driver.hook(config, second)
    model = driver.model([driver.text_step("ok")] * 2, context_size=8000)
    agent = await driver.agent(hook, model)

    with pytest.raises(ValueError, match="already has another copaw-context hook; an agent takes"):
        await other.attach(agent)
    assert await hook.attach(agent) is hook  # the hook it has: still fine (idempotent)

    assert await driver.ask(agent, "hello") == "ok"
    sent = json.dumps(await driver.provider_inputs(model.calls[-1]))
    assert "FROM-ONE" in sent and "FROM-TWO" not in sent
    await hook.close()
    await other.close()
