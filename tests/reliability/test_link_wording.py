"""Refusals of links out of the workspace name the path, the link and its target, and the fix.

Real agents on both majors: ``/dump_history`` with no path when ``dialog/dumps`` is a link
out (the user gave no path: the default folder is named, not ``''``), ``/load_history`` of
a file that is a link to one outside, and ``memory_edit`` when MEMORY.md is a link out (the
tool result the model reads). Each answer must name the link and where it leads, and say
what to do; the outside files stay as they were.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from copaw_context.core.config.running import parse_running_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.link_race import outside_files


def _config() -> Any:
    return parse_running_config(
        {
            "running": {
                "max_input_length": 8000,
                "memory": {"enabled": True, "summarise_on_compact": False},
                "light_context_config": {"token_counter": "o200k_base", "compactor": "extractive"},
            }
        }
    )


async def scenario(driver: HostDriver, root: Path) -> dict[str, str]:
    workspace, outside = root / "ws", root / "outside"
    (workspace / "dialog").mkdir(parents=True)
    (outside / "dumps").mkdir(parents=True)
    (outside / "history.json").write_text('{"messages": []}', "utf-8")
    (outside / "secret.md").write_text("# Memory\n\n## Facts\n- outside\n", "utf-8")
    (workspace / "dialog" / "dumps").symlink_to(outside / "dumps", target_is_directory=True)
    (workspace / "link.json").symlink_to(outside / "history.json")
    (workspace / "MEMORY.md").symlink_to(outside / "secret.md")
    before = outside_files(outside)
    results: list[str] = []

    async def step(call: Any) -> list[Any]:
        if not driver.tool_schemas(call):
            return driver.text_step("## Goal\nsummary")
        text = str((await driver.provider_inputs(call))["openai"][-1].get("content"))
        if not results:  # the first step of the turn: the edit; then read its result
            results.append("called")
            return driver.tool_step([("memory_edit", {"section": "Facts", "content": "- x"}, None)])
        results.append(text)
        return driver.text_step("noted")

    hook = driver.hook(_config(), workspace)
    agent = await driver.agent(hook, driver.model([step] * 20, context_size=8000))
    answers = {
        "dump": await driver.ask(agent, "/dump_history"),
        "load": await driver.ask(agent, "/load_history link.json"),
    }
    await driver.ask(agent, "please remember x")
    answers["memory_edit"] = results[-1]
    answers["outside_unchanged"] = str(outside_files(outside) == before)
    answers["outside"] = str(outside.resolve())
    answers["workspace"] = str(workspace.resolve())
    return answers


def test_link_refusals_name_the_link_its_target_and_the_fix(
    driver: HostDriver, tmp_path: Path
) -> None:
    answers = asyncio.run(scenario(driver, tmp_path))
    outside, workspace = answers["outside"], answers["workspace"]
    checks = {
        "dump": (
            f"{workspace}/dialog/dumps is a symbolic link to {outside}/dumps",
            "Remove the link",
        ),
        "load": (
            f"{workspace}/link.json is a symbolic link to {outside}/history.json",
            "Copy the file",
        ),
        "memory_edit": (
            f"{workspace}/MEMORY.md is a symbolic link to {outside}/secret.md",
            "Replace the link",
        ),
    }
    named = sum(
        1 for key, (link, fix) in checks.items() if link in answers[key] and fix in answers[key]
    )
    record("link_wording", refusals=len(checks), naming_link_target_and_fix=named)
    for key, (link, fix) in checks.items():
        assert link in answers[key] and fix in answers[key], (key, answers[key])
    assert "''" not in answers["dump"], answers["dump"]
    assert answers["outside_unchanged"] == "True"
