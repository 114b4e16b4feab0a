"""Ports LangChain's SummarizationMiddleware and trim_messages cases (AI/Tool pairs across
the cutoff, start_on="human", keep the recent request) to a real agent of either major:
several calls in one message kept with their results, a cutoff landing on a tool message or
inside ten calls, parallel calls then /compact; every model input paired for every
provider and within the window, the kept tail starting at a user message."""

from __future__ import annotations

from pathlib import Path

from tests.ported.kit import fixed_tool, numbered, play, text_of
from tests.reliability.drivers import HostDriver


def test_lc_multiple_tool_calls_in_one_ai_message_kept_with_results(
    driver: HostDriver, tmp_path: Path
) -> None:
    window = 3000
    turns = [
        (
            f"task {t}",
            [("tools", [("fetch", {"index": i}, None) for i in range(3)]), ("text", f"answer {t}")],
        )
        for t in range(6)
    ]
    run = play(driver, tmp_path, window, turns, [fixed_tool(numbered(0, 1500), "fetch")])
    assert not run.problems, run.problems


def test_lc_cutoff_lands_on_tool_message(driver: HostDriver, tmp_path: Path) -> None:
    window = 2500
    steps = [("tools", [("fetch", {"index": i}, None)]) for i in range(14)] + [("text", "done")]
    run = play(
        driver,
        tmp_path,
        window,
        [("long job", steps)],
        [fixed_tool(numbered(0, 1200), "fetch")],
    )
    assert not run.problems, run.problems
    assert run.replies == ["done"]


def test_lc_many_parallel_calls_then_summary(driver: HostDriver, tmp_path: Path) -> None:
    window = 4000
    turns = [
        (
            "collect",
            [
                ("tools", [("fetch", {"index": i}, None) for i in range(8)]),
                ("tools", [("fetch", {"index": i}, None) for i in range(8)]),
                ("text", "collected"),
            ],
        ),
        ("/compact", []),
        ("next", [("tools", [("fetch", {"index": 1}, None)]), ("text", "fine")]),
    ]
    run = play(driver, tmp_path, window, turns, [fixed_tool(numbered(0, 700), "fetch")])
    assert not run.problems, run.problems
    assert run.replies[-1] == "fine"


def test_lc_keep_messages_preserves_recent_request(driver: HostDriver, tmp_path: Path) -> None:
    window = 2500
    turns = [
        (f"question {t} " + "detail " * 80, [("text", f"answer {t} " + "words " * 80)])
        for t in range(10)
    ]
    run = play(driver, tmp_path, window, turns)
    assert not run.problems, run.problems
    last_user = [text_of(m.get("content")) for m in run.seen[-1] if m.get("role") == "user"]
    assert any("question 9" in u for u in last_user), last_user[-1][:200]


def test_lc_trim_start_on_human_after_compaction(driver: HostDriver, tmp_path: Path) -> None:
    turns = [
        (
            f"q{t} " + "ctx " * 40,
            [("tools", [("fetch", {"index": t}, None)]), ("text", f"a{t} " + "ok " * 40)],
        )
        for t in range(10)
    ]
    run = play(driver, tmp_path, 2500, turns, [fixed_tool("data " * 300)])
    assert not run.problems, run.problems
    for index, seen in enumerate(run.seen):
        roles = [m["role"] for m in seen if m["role"] != "system"]
        assert roles[0] == "user", f"call {index}: first non-system message is {roles[0]}"


def test_lc_ten_calls_one_message_cutoff_inside(driver: HostDriver, tmp_path: Path) -> None:
    turns = [
        ("warm " + "ctx " * 200, [("text", "ok " * 200)]),
        (
            "ten",
            [
                ("tools", [("fetch", {"index": i}, None) for i in range(10)]),
                ("tools", [("fetch", {"index": i}, None) for i in range(10)]),
                ("text", "end"),
            ],
        ),
        ("after", [("text", "fine")]),
    ]
    run = play(driver, tmp_path, 3000, turns, [fixed_tool("r " * 90)])
    assert not run.problems, run.problems
    assert run.replies[-1] == "fine"
