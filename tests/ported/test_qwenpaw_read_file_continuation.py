"""Ports QwenPaw's light-context continuation: a cut result's notice followed with
read_file(start_line, line_offset) until the end gives back the full text exactly (a single
800 KB CJK+emoji line, CRLF, 70 KB lines, no trailing newline, a lone CR), on either major."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.toolresults.truncation import parse_truncation_notice
from tests.ported.kit import text_of
from tests.reliability.agent_session import agent_config
from tests.reliability.drivers import HostDriver

SHAPES = {
    "cjk_one_line": "\u4e2d\u6587\u6d4b\u8bd5\U0001f600" * 40000,
    "crlf_lines": "".join(f"row {i}, value {i * 7}\r\n" for i in range(12000)),
    "mixed_long_lines": "".join(
        ("x" * 70000 + "\n") if i % 3 == 0 else f"short {i}\n" for i in range(9)
    ),
    "no_trailing_newline": "a\n" * 30000 + "tail without newline",
    "lone_cr": "part one\rpart two\r" * 8000,
}


async def _follow(driver: HostDriver, ws: Path, text: str) -> tuple[str, int, list[str]]:
    pieces: list[str] = []
    errors: list[str] = []
    reads = 0

    def dump(index: int = 0) -> str:
        """Dump.

        Args:
            index (`int`): Which.
        """
        return text

    async def step(call: Any) -> list[Any]:
        nonlocal reads
        formatted = await driver.provider_inputs(call)
        tools = [m for m in formatted["openai"] if m.get("role") == "tool"]
        if not tools:
            return driver.tool_step([("dump", {}, None)])
        shown = text_of(tools[-1].get("content"))
        parsed = parse_truncation_notice(shown)
        if parsed is None:
            pieces.append(shown)
            return driver.text_step("done")
        body, notice = parsed
        pieces.append(body)
        if reads > 60:
            errors.append("too many reads")
            return driver.text_step("done")
        reads += 1
        return driver.tool_step(
            [
                (
                    "read_file",
                    {
                        "file_path": notice.file_path,
                        "start_line": notice.next_line,
                        "line_offset": notice.next_offset,
                    },
                    None,
                )
            ]
        )

    hook = driver.hook(agent_config(200000, "extractive"), ws)
    model = driver.model([step] * 70, context_size=200000)
    agent = await driver.agent(hook, model, [dump])
    await driver.ask(agent, "dump it and read it all")
    return "".join(pieces), reads, errors


@pytest.mark.parametrize("shape", list(SHAPES))
def test_qp_follow_notice_gives_full_text(driver: HostDriver, tmp_path: Path, shape: str) -> None:
    text = SHAPES[shape]
    got, reads, errors = asyncio.run(_follow(driver, tmp_path, text))
    assert not errors, errors
    assert reads >= 1
    if got != text:
        first = (
            next(i for i, (a, b) in enumerate(zip(got, text, strict=False)) if a != b)
            if len(got) and any(a != b for a, b in zip(got, text, strict=False))
            else min(len(got), len(text))
        )
        raise AssertionError(
            f"{shape}: reassembled {len(got)} chars, original {len(text)}; first "
            f"difference at {first}: got {got[first : first + 40]!r} "
            f"want {text[first : first + 40]!r}"
        )
