"""Memory links through real agents with memory on: no outside text reaches a model input.

Real agents on both majors, memory on, call ``memory_search``, ``memory_append_log`` and
``memory_edit`` at every turn and compact, in a workspace whose MEMORY.md, memory folder,
daily log or recall index is a symbolic link to a file outside holding a marker text (also
one swapped in mid-session, and folders swapped for a link right after every check of them:
the check-then-write race). Counted for each: the marker in the model inputs (the system
prompt with MEMORY.md, the tool results), files outside changed or created, replies. The
``inside`` run has the same marker in real files inside the workspace: the count finds it
there, so a zero elsewhere is a real zero.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.memory.tools import MemoryTools
from tests.reliability.agent_session import produce
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.engine_session import filler
from tests.reliability.link_race import LinkRace, outside_files, swap_after_checks

WINDOW = 8000
TURNS = 5
MARKER = "OUTSIDE-MARKER-9c41"
LINKS = ("memory_md", "memory_dir", "daily_log", "old_log", "index", "swapped_mid_session")
RACES = ("memory_race", "tool_result_race", "dialog_race")
TODAY = date.today().isoformat()
OLD_DAY = (date.today() - timedelta(days=3)).isoformat()


def _config() -> RunningConfig:
    return parse_running_config(
        {
            "running": {
                "max_input_length": WINDOW,
                "memory": {"enabled": True, "summarise_on_compact": False},
                "light_context_config": {"token_counter": "o200k_base", "compactor": "extractive"},
            }
        }
    )


async def _outside(root: Path) -> Path:
    """A folder outside holding the marker as MEMORY.md, daily logs and a built index."""
    outside = root / "outside"
    (outside / "logs").mkdir(parents=True)
    (outside / "secret.md").write_text(f"# Memory\n\n## Facts\n- {MARKER} fact\n", "utf-8")
    for day in (TODAY, OLD_DAY):
        (outside / "logs" / f"{day}.md").write_text(f"# {day}\n\n- {MARKER} log\n", "utf-8")
    other = root / "other_ws"
    (other / "memory").mkdir(parents=True)
    (other / "memory" / f"{OLD_DAY}.md").write_text(f"# d\n\n- {MARKER} indexed\n", "utf-8")
    tools = MemoryTools.for_workspace(other)
    assert MARKER in await tools.memory_search("marker")
    os.replace(tools.index.path, outside / "index.sqlite3")
    return outside


def _plant(attack: str, workspace: Path, outside: Path) -> None:
    memory = workspace / "memory"
    if attack in ("memory_md", "swapped_mid_session"):
        (workspace / "MEMORY.md").unlink(missing_ok=True)
        (workspace / "MEMORY.md").symlink_to(outside / "secret.md")
    elif attack == "memory_dir":
        memory.symlink_to(outside / "logs", target_is_directory=True)
    elif attack in ("daily_log", "old_log"):
        memory.mkdir(exist_ok=True)
        day = TODAY if attack == "daily_log" else OLD_DAY
        (memory / f"{day}.md").symlink_to(outside / "logs" / f"{day}.md")
    elif attack == "index":
        memory.mkdir(exist_ok=True)
        (memory / ".index.sqlite3").symlink_to(outside / "index.sqlite3")
    elif attack == "inside":  # the marker in real files inside: the count must find it
        memory.mkdir(exist_ok=True)
        (workspace / "MEMORY.md").write_bytes((outside / "secret.md").read_bytes())
        (memory / f"{OLD_DAY}.md").write_bytes((outside / "logs" / f"{OLD_DAY}.md").read_bytes())


class _Script:
    """The scripted model: each turn the three memory tools and a large tool output, then a
    text; every input it receives is searched for the marker."""

    def __init__(self, driver: HostDriver) -> None:
        self.driver = driver
        self.marker_in_inputs = 0
        self.inputs = 0
        self.turn = 0
        self.called = False

    async def step(self, call: Any) -> list[Any]:
        if not self.driver.tool_schemas(call):
            return self.driver.text_step("## Goal\nsummary")
        formatted = await self.driver.provider_inputs(call)
        self.marker_in_inputs += json.dumps(formatted, ensure_ascii=False).count(MARKER)
        self.inputs += 1
        if self.called:
            self.called = False
            return self.driver.text_step(f"done {self.turn}")
        self.called = True
        n = self.turn
        return self.driver.tool_step(
            [
                ("memory_search", {"query": "marker"}, None),  # finds it, never names it
                ("memory_append_log", {"text": f"- checked item {n}"}, None),
                ("memory_edit", {"section": "Lessons", "content": f"- lesson {n}"}, None),
                ("produce", {"size": 6000, "seed": n, "cjk": False}, None),
            ]
        )


def _races(attack: str, workspace: Path, outside: Path) -> list[LinkRace]:
    if attack not in RACES:
        return []
    folder = workspace / attack.removesuffix("_race")
    folder.mkdir(exist_ok=True)
    return [LinkRace(folder, outside / "logs")]


async def scenario(
    driver: HostDriver, attack: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, int]:
    workspace = root / "ws"
    workspace.mkdir()
    outside = await _outside(root)
    before = outside_files(outside)
    if attack != "swapped_mid_session":
        _plant(attack, workspace, outside)
    events: list[Any] = []
    script = _Script(driver)
    hook = driver.hook(_config(), workspace, on_event=events.append)
    model = driver.model([script.step] * 400, context_size=WINDOW)
    agent = await driver.agent(hook, model, [produce])
    races = _races(attack, workspace, outside)
    replies = 0
    with swap_after_checks(monkeypatch, *races):
        for number in range(TURNS):
            script.turn = number
            if attack == "swapped_mid_session" and number == 2:
                _plant(attack, workspace, outside)
            reply = await driver.ask(agent, f"request {number}: " + filler(1500, number))
            replies += bool(reply.strip())
    after = outside_files(outside)
    state = await driver.engine_state(hook, agent)
    return {
        "turns": TURNS,
        "replies": replies,
        "model_inputs": script.inputs,
        "marker_in_model_inputs": script.marker_in_inputs,
        "compactions": [e.kind for e in events].count("compaction"),
        "archive_deferred": [e.kind for e in events].count("archive_deferred"),
        "messages_pending": len(state.get("pending_archive") or []),
        "swaps": sum(race.swaps for race in races),
        "outside_changed": sum(1 for k in before if after.get(k) != before[k]),
        "outside_created": len(set(after) - set(before)),
        "outside_removed": len(set(before) - set(after)),
    }


@pytest.mark.parametrize("attack", LINKS + RACES)
def test_memory_links_never_bring_outside_text_to_the_model(
    driver: HostDriver, attack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = asyncio.run(scenario(driver, attack, tmp_path, monkeypatch))
    outside_text = figures.pop("marker_in_model_inputs")
    record(f"memory_links_agents[{attack}]", outside_text_in_model_inputs=outside_text, **figures)
    assert figures["replies"] == figures["turns"]
    assert figures["model_inputs"] >= 2 * figures["turns"]
    assert outside_text == 0
    assert figures["outside_changed"] + figures["outside_created"] + figures["outside_removed"] == 0
    if attack in RACES:
        assert figures["swaps"] > 0
    if attack == "dialog_race":  # refused, so kept in the pending buffer: nothing lost
        assert figures["archive_deferred"] > 0 and figures["messages_pending"] > 0


def test_the_marker_count_finds_the_marker_inside_the_workspace(
    driver: HostDriver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same files as real files inside the workspace: the marker reaches the model (in
    MEMORY.md of the system prompt and in the search results), so the count works."""
    figures = asyncio.run(scenario(driver, "inside", tmp_path, monkeypatch))
    record("memory_links_agents[inside]", **figures)
    assert figures["marker_in_model_inputs"] >= figures["model_inputs"]
    assert figures["replies"] == figures["turns"]
