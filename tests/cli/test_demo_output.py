"""``copaw-context demo`` explains itself (issue 22, item 6): a header saying what the step
columns mean, an ellipsis where a preview is cut, a reason on each drop, and no empty section
on a short run."""

from __future__ import annotations

from pathlib import Path

import pytest

from copaw_context.cli import main
from copaw_context.cli.demo import demo_user_turns


def run_demo_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], steps: int) -> list[str]:
    workspace = tmp_path / "demo-workspace"
    assert main(["demo", "--steps", str(steps), "--workspace", str(workspace)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out.splitlines()


def sections(lines: list[str]) -> dict[str, list[str]]:
    """Each ``=== title ===`` of the report and its lines up to the next one (blanks dropped)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith("=== ") and line.endswith(" ==="):
            current = found.setdefault(line[4:-4], [])
        elif current is not None and line.strip():
            current.append(line)
    return found


def test_the_step_columns_are_explained_before_the_first_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = run_demo_cli(tmp_path, capsys, 12)
    first_step = next(i for i, line in enumerate(lines) if line.startswith("step "))
    header = "\n".join(lines[:first_step])
    for column in ("one model call", "truncations =", "offloads =", "compactions ="):
        assert column in header


def test_cut_previews_end_with_an_ellipsis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = run_demo_cli(tmp_path, capsys, 12)
    users = [line.removeprefix("user> ") for line in lines if line.startswith("user> ")]
    turns = [" ".join(turn.split()) for turn in demo_user_turns()][: len(users)]
    assert any(len(turn) > 100 for turn in turns)
    for shown, turn in zip(users, turns, strict=True):
        if len(turn) > 100:
            assert shown.endswith("\u2026") and turn.startswith(shown[:-1])
            assert len(shown) == 100
        else:
            assert shown == turn
    replies = [line for line in lines if line.startswith("assistant> ")]
    assert replies and all(len(r) <= len("assistant> ") + 160 for r in replies)
    for reply in replies:
        # The scripted reply quotes the request: cut with an ellipsis too, never mid-word bare.
        request = reply.split("Finished: ", 1)[1].split(" Findings: ", 1)[0]
        full = next(t for t in turns if t.startswith(request.rstrip("\u2026")))
        assert request == full or request.endswith("\u2026")


def test_a_short_run_prints_no_empty_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = sections(run_demo_cli(tmp_path, capsys, 12))
    assert all(body for body in report.values()), report
    assert report["compactions"][0].startswith("none in 12 model calls")
    assert "summary in the context" not in report  # nothing was compacted: no summary


def test_a_long_run_shows_every_section_and_explains_each_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = run_demo_cli(tmp_path, capsys, 60)
    report = sections(lines)
    assert all(body for body in report.values()), report
    assert "summary in the context" in report and "files written" in report
    steps = [line for line in lines if line.startswith("step ")]
    tokens = [int(line.split("|")[1].split()[1]) for line in steps]
    for before, after, line in zip(tokens, tokens[1:], steps[1:], strict=False):
        if after < before:  # every drop says why
            assert line.endswith(
                ("<- compacted", "<- older tool results cut to their smaller limit")
            )
    assert any("drops without a compaction (steps " in line for line in report["compactions"])
