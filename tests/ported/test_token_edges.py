"""Ports LangChain's count_tokens_approximately and AgentScope's token-count edge cases:
empty, whitespace-only, 120 KB CJK, 80 KB emoji and NUL-laden tool outputs, a request of 400
one-word blocks; every model input valid and within the window (o200k_base)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ported.kit import fixed_tool, play
from tests.reliability.drivers import HostDriver


@pytest.mark.parametrize(
    "output", ["", "   \n\t", "\u4e2d\u6587" * 30000, "\U0001f600" * 20000, "x" * 5 + "\x00" * 10]
)
def test_tokens_edge_outputs(driver: HostDriver, tmp_path: Path, output: str) -> None:
    window = 8000
    run = play(
        driver,
        tmp_path,
        window,
        [
            ("go", [("tools", [("dump", {}, None)]), ("text", "done")]),
            ("again", [("tools", [("dump", {}, None)]), ("text", "done")]),
        ],
        [fixed_tool(output, "dump")],
    )
    assert not run.problems, run.problems
    assert run.replies == ["done", "done"]


def test_tokens_many_small_blocks_request(driver: HostDriver, tmp_path: Path) -> None:
    window = 3000
    run = play(driver, tmp_path, window, [(["tiny"] * 400, [("text", "done")])])
    assert not run.problems, run.problems
