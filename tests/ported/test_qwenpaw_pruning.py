"""Ports QwenPaw's test_prune_tool_result.py (light context pruning) to a real agent of either
major: a small output is unchanged, a 200 KB recent result is capped at 50,000 bytes with a
notice whose file holds the full text, 40 KB passes through, an exempt tool is still capped at
102,400 bytes, an older result is cut to 3,000 bytes once a new request comes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.ported.kit import fixed_tool, numbered, play, recover
from tests.reliability.drivers import HostDriver

PER_STEP = {"tool_result_pruning_config": {"pruning_batch_ratio": 0}}


def _one_result(
    driver: HostDriver, workspace: Path, window: int, name: str, output: str, **options: Any
) -> str:
    """One call of a tool ``name`` returning ``output``; the result as the model saw it."""
    turn = ("go", [("tools", [(name, {}, None)]), ("text", "done")])
    run = play(driver, workspace, window, [turn], [fixed_tool(output, name)], **options)
    assert not run.problems, run.problems
    return run.tool_texts()[0]


def test_qp_small_output_unchanged(driver: HostDriver, tmp_path: Path) -> None:
    assert _one_result(driver, tmp_path, 32000, "echo", "hello world") == "hello world"


def test_qp_recent_capped_and_recoverable(driver: HostDriver, tmp_path: Path) -> None:
    big = "A" * 200000
    shown = _one_result(driver, tmp_path, 128000, "dump", big)
    assert len(shown.encode()) <= 50000 + 600, len(shown.encode())
    assert recover(tmp_path, shown) == big


def test_qp_40k_under_recent_limit_passes_through(driver: HostDriver, tmp_path: Path) -> None:
    text = "E" * 40000
    assert _one_result(driver, tmp_path, 128000, "dump", text) == text


def test_qp_exempt_tool_still_capped(driver: HostDriver, tmp_path: Path) -> None:
    big = "D" * 300000
    light = {"tool_result_pruning_config": {"exempt_tool_names": ["chat_with_agent"]}}
    shown = _one_result(driver, tmp_path, 200000, "chat_with_agent", big, light=light)
    assert len(shown.encode()) <= 102400 + 600, len(shown.encode())
    assert recover(tmp_path, shown) == big


def test_qp_old_result_cut_to_old_limit(driver: HostDriver, tmp_path: Path) -> None:
    big = numbered(1, 20000)
    run = play(
        driver,
        tmp_path,
        64000,
        [
            ("first", [("tools", [("dump", {}, None)]), ("text", "ok")]),
            (
                "question",
                [
                    ("tools", [("small", {}, None)]),
                    ("tools", [("small", {}, None)]),
                    ("tools", [("small", {}, None)]),
                    ("text", "done"),
                ],
            ),
        ],
        [fixed_tool(big, "dump"), fixed_tool("small", "small")],
        light=PER_STEP,  # QwenPaw cuts each result once old: our stage 2 without batches
    )
    first = run.tool_texts()[0]
    assert not run.problems, run.problems
    assert len(first.encode()) <= 3000 + 600, len(first.encode())
    assert recover(tmp_path, first) == big
