"""Ports QwenPaw's exempt limits (.md files read whole, exempt tools capped at 102,400 bytes):
in an 8K window neither overrides the window; every model input fits and the exempt tool's
cut result names a file holding its full text."""

from __future__ import annotations

from pathlib import Path

from tests.ported.kit import play, recover
from tests.reliability.drivers import HostDriver


def test_qp_md_file_read_in_small_window(driver: HostDriver, tmp_path: Path) -> None:
    text = "".join(f"## Section {i}\nSome markdown text for section {i}.\n" for i in range(1500))
    (tmp_path / "GUIDE.md").write_text(text, encoding="utf-8")
    run = play(
        driver,
        tmp_path,
        8000,
        [
            (
                "read the guide",
                [
                    ("tools", [("read_file", {"file_path": "GUIDE.md"}, None)]),
                    ("text", "read"),
                ],
            ),
            ("more", [("text", "fine")]),
        ],
    )
    assert not run.problems, run.problems


def test_qp_exempt_tool_in_small_window(driver: HostDriver, tmp_path: Path) -> None:
    big = "agent says: " + "word " * 12000

    def chat_with_agent(message: str = "") -> str:
        """Talk to another agent.

        Args:
            message (`str`): What to say.
        """
        return big

    run = play(
        driver,
        tmp_path,
        8000,
        [
            (
                "ask the other agent",
                [
                    ("tools", [("chat_with_agent", {"message": "hi"}, None)]),
                    ("text", "asked"),
                ],
            ),
            ("again", [("text", "fine")]),
        ],
        [chat_with_agent],
        light={"tool_result_pruning_config": {"exempt_tool_names": ["chat_with_agent"]}},
    )
    assert not run.problems, run.problems
    shown = run.tool_texts(1)[0]
    assert recover(tmp_path, shown) == big
