"""Ports ReMe's compaction cases: reserve ratios at the extremes (0 and 0.3) and a turn ending
in tool use kept paired at the tail; every model input paired and within the window."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ported.kit import fixed_tool, numbered, play
from tests.reliability.drivers import HostDriver


@pytest.mark.parametrize("reserve", [0.0, 0.3])
def test_reme_reserve_extremes(driver: HostDriver, tmp_path: Path, reserve: float) -> None:
    turns = [
        (
            f"q{t}",
            [
                ("tools", [("fetch", {"index": i}, None) for i in range(2)]),
                ("text", f"a{t} " + "words " * 50),
            ],
        )
        for t in range(8)
    ]
    run = play(
        driver,
        tmp_path,
        3000,
        turns,
        [fixed_tool("x " * 500)],
        light={
            "context_compact_config": {
                "reserve_threshold_ratio": reserve,
                "compact_threshold_ratio": 0.9 if reserve else 0.1,
            }
        },
    )
    assert not run.problems, run.problems


def test_reme_tail_tool_use_kept_paired(driver: HostDriver, tmp_path: Path) -> None:
    window = 2500
    turns = [(f"step {t} " + "context " * 60, [("text", "ack " * 60)]) for t in range(5)]
    turns.append(
        (
            "final",
            [
                ("tools", [("fetch", {"index": 0}, None), ("fetch", {"index": 1}, None)]),
                ("tools", [("fetch", {"index": 2}, None)]),
                ("text", "end"),
            ],
        )
    )
    run = play(driver, tmp_path, window, turns, [fixed_tool(numbered(0, 2000), "fetch")])
    assert not run.problems, run.problems
    assert run.replies[-1] == "end"
