"""Recall through real agents (issue 22 item 4): ``memory_search`` finds a cut tool output's
full text and the summary ``/clear`` removed, in English and Chinese, and the ``read_file``
call each hit names reads the matched text.

On both majors: a build log is cut when it enters the context (its full text saved in
``tool_result/``); the agent searches a line deep in the saved part and reads it with the
call the hit names; ``/compact`` makes a summary and ``/clear`` removes it; the agent then
finds the summary (``dialog/summaries/``) and reads it whole. The scripted model takes every
tool result from its own input, as a real model would.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from copaw_context.core.config.running import RunningConfig, parse_running_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver

WINDOW = 8000
ERROR_LINE = "ld: error: undefined symbol: zq_init_4711"
ZH_LINE = "链接器错误：找不到符号 西风初始化"
REQUEST = "Deploy project Zephyr-88 to staging: 部署西风项目到预发环境"
_READ_CALL = re.compile(r'read_file\(file_path=("[^"]+"), start_line=(\d+)\)')


def build_log() -> str:
    """Return the build log of the project."""
    rows = [f"step {n}: compiling unit_{n}.c ok" for n in range(1, 401)]
    rows[276], rows[332] = ERROR_LINE, ZH_LINE
    return "\n".join(rows) + "\n"


def _config() -> RunningConfig:
    return parse_running_config(
        {
            "running": {
                "max_input_length": WINDOW,
                "memory": {"enabled": True, "summarise_on_compact": False},
                "light_context_config": {
                    "token_counter": "o200k_base",
                    "compactor": "extractive",
                    "tool_result_pruning_config": {
                        "pruning_recent_msg_max_bytes": 3000,
                        "pruning_old_msg_max_bytes": 1000,
                    },
                },
            }
        }
    )


def _last_tool_text(formatted: dict[str, list[dict[str, Any]]]) -> str:
    """The text of the newest tool result in an OpenAI-formatted input."""
    for message in reversed(formatted["openai"]):
        if message.get("role") == "tool":
            content = message.get("content")
            if isinstance(content, list):
                return "\n".join(str(part.get("text", "")) for part in content)
            return str(content)
    return ""


class _Script:
    """Per turn a queue of steps; a step is a text, a tool call, or ``("read", prefix)``: the
    read_file call named under the first hit in ``prefix`` of the search result the model
    just received."""

    def __init__(self, driver: HostDriver) -> None:
        self.driver = driver
        self.plan: list[Any] = []
        self.seen: list[str] = []  # every tool result the model received

    async def step(self, call: Any) -> list[Any]:
        if not self.driver.tool_schemas(call):
            return self.driver.text_step("## Goal\nsummary")
        formatted = await self.driver.provider_inputs(call)
        if self.plan and self.plan[0] != "first":
            self.seen.append(_last_tool_text(formatted))
        elif self.plan:
            self.plan.pop(0)
        action = self.plan.pop(0) if self.plan else "done"
        if isinstance(action, tuple) and action[0] == "read":  # ("read", a path prefix)
            found = [
                m
                for m in _READ_CALL.finditer(self.seen[-1])
                if m.group(1)[1:].startswith(action[1])
            ]
            assert found, self.seen[-1][:400]
            path, line = json.loads(found[0].group(1)), int(found[0].group(2))
            return self.driver.tool_step(
                [("read_file", {"file_path": path, "start_line": line}, None)]
            )
        if isinstance(action, tuple):
            return self.driver.tool_step([action])
        return self.driver.text_step(str(action))


async def scenario(driver: HostDriver, workspace: Path) -> dict[str, Any]:
    script = _Script(driver)
    hook = driver.hook(_config(), workspace)
    model = driver.model([script.step] * 100, context_size=WINDOW)
    agent = await driver.agent(hook, model, [build_log])

    async def turn(text: str, *steps: Any) -> str:
        script.plan = ["first", *steps]
        return await driver.ask(agent, text)

    await turn(REQUEST, ("build_log", {}, None), "The link step fails.")
    await turn(
        "Find the undefined symbol",
        ("memory_search", {"query": "zq_init_4711"}, None),
        ("read", "tool_result/"),
        "found",
    )
    await turn(
        "找一下链接器错误",
        ("memory_search", {"query": "找不到符号"}, None),
        ("read", "tool_result/"),
        "找到了",
    )
    await turn("/compact")
    await turn("/clear")
    await turn(
        "What was the project?",
        ("memory_search", {"query": "Zephyr-88"}, None),
        ("read", "dialog/summaries/"),
        "Zephyr-88",
    )
    await turn("预发环境是哪个项目？", ("memory_search", {"query": "预发环境"}, None), "西风")
    close = getattr(hook, "close", None)
    if close is not None:
        await close()
    return {
        "seen": script.seen,
        "saved": sorted(p.name for p in (workspace / "tool_result").glob("*.txt")),
    }


def test_memory_search_reaches_cut_outputs_and_cleared_summaries(
    driver: HostDriver, tmp_path: Path
) -> None:
    figures = asyncio.run(scenario(driver, tmp_path / "ws"))
    seen, saved = figures["seen"], figures["saved"]
    assert len(saved) == 1
    output = f'"tool_result/{saved[0]}"'
    cut, en_search, en_read, zh_search, zh_read, after_clear, summary_read, zh_summary = seen
    assert "<<<TRUNCATED>>>" in cut and ERROR_LINE not in cut  # the line was cut away
    assert (
        f"from the full text of a cut tool output; read_file(file_path={output}, start_line=277)"
        in en_search
    )
    assert en_read.startswith(ERROR_LINE)
    assert "start_line=333)" in zh_search and zh_read.startswith(ZH_LINE)
    summary_hit = re.search(
        r"from a summary that /clear or /new removed; "
        r'read_file\(file_path="(dialog/summaries/[^"]+)", start_line=1\)',
        after_clear,
    )
    assert summary_hit, after_clear
    assert summary_read.startswith("# /clear · ") and "Zephyr-88" in summary_read
    assert "dialog/summaries/" in zh_summary and "预发环境" in zh_summary
    searches = (en_search, zh_search, after_clear, zh_summary)
    record(
        f"recall_agents[{driver.name}]",
        searches=len(searches),
        output_hits=sum(s.count("from the full text of a cut tool output") for s in searches),
        summary_hits=sum(s.count("from a summary that /clear or /new removed") for s in searches),
        results_chars=sum(map(len, searches)),
    )
