"""memory_edit's checks and the MEMORY.md section parser agree: one Markdown parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from copaw_context.core.markdown_blocks import bullet_indent, heading_of, parse_blocks
from copaw_context.core.memory.markdown import entry_items, section_titles, split_sections
from copaw_context.core.memory.tools import MemoryTools
from copaw_context.core.summary import Summary
from copaw_context.core.summary.markdown import find_headings

FENCE = "`" * 3


def _tools(tmp_path: Path, text: str) -> MemoryTools:
    (tmp_path / "MEMORY.md").write_text(text, encoding="utf-8")
    return MemoryTools.for_workspace(tmp_path)


def _lessons(tmp_path: Path) -> int:
    text = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    return sum(1 for line in text.split("\n") if line.strip() == "## Lessons")


async def test_unclosed_fence_in_file_refuses_replace_instead_of_duplicating(
    tmp_path: Path,
) -> None:
    text = f"## Notes\n\n{FENCE}\nsome code\n\n## Lessons\n\n- old fact\n"
    tools = _tools(tmp_path, text)
    answer = await tools.memory_edit("Lessons", "- new fact", mode="replace")
    assert not answer.startswith("Replaced"), answer
    assert "never closed" in answer and "line 3" in answer
    assert (tmp_path / "MEMORY.md").read_text(encoding="utf-8") == text
    assert _lessons(tmp_path) == 1


async def test_indented_fence_is_code_so_the_following_heading_is_a_section(
    tmp_path: Path,
) -> None:
    text = f"## Notes\n\n    {FENCE}\n    indented code\n\n## Lessons\n\n- old fact\n"
    tools = _tools(tmp_path, text)
    answer = await tools.memory_edit("Lessons", "- new fact", mode="replace")
    assert answer.startswith("Replaced"), answer
    new = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    assert _lessons(tmp_path) == 1
    assert "- new fact" in new and "old fact" not in new


async def test_content_with_indented_fence_cannot_smuggle_a_heading(tmp_path: Path) -> None:
    tools = _tools(tmp_path, "## Notes\n\n- a\n")
    content = f"- tip\n\n    {FENCE}\n## Injected\n    {FENCE}\n"
    answer = await tools.memory_edit("Notes", content)
    assert answer.startswith("Error"), answer
    assert "## Injected" not in (tmp_path / "MEMORY.md").read_text(encoding="utf-8")


async def test_content_with_unclosed_fence_is_refused(tmp_path: Path) -> None:
    tools = _tools(tmp_path, "## Notes\n\n- a\n\n## Lessons\n\n- b\n")
    answer = await tools.memory_edit("Notes", f"- tip\n{FENCE}python\nx = 1")
    assert answer.startswith("Error") and "never closed" in answer, answer
    assert section_titles((tmp_path / "MEMORY.md").read_text(encoding="utf-8")) == [
        "Notes",
        "Lessons",
    ]


async def test_heading_inside_a_closed_fence_is_allowed_and_stays_code(tmp_path: Path) -> None:
    tools = _tools(tmp_path, "## Notes\n\n- a\n")
    answer = await tools.memory_edit("Notes", f"{FENCE}md\n## not a section\n{FENCE}")
    assert answer.startswith("Added"), answer
    assert section_titles((tmp_path / "MEMORY.md").read_text(encoding="utf-8")) == ["Notes"]


@pytest.mark.parametrize(
    "text",
    [
        f"## A\n{FENCE}\n## B\n",
        f"## A\n    {FENCE}\n## B\n",
        "## A\n~~~\n## B\n~~~\n## C\n",
        f"## A\n{FENCE}\n## B\n~~~\n## C\n",
        "## A\n\n    ## B\n\n## C\n",
        "## A\n- ## B\n## C\n",
        f"## A\n{FENCE}{FENCE}\n## B\n{FENCE}\n## C\n",
        "## A\n##B\n## C\n",
        "## A\n   ## B\n## C ##\n",
        "## A\n<summary>\n## B\n</summary>\n## C#\n",
        "## A\n~~~\n## B\n",
    ],
)
def test_section_parser_and_summary_headings_and_blocks_agree(text: str) -> None:
    lines, sections = split_sections(text)
    blocks = parse_blocks(lines)
    parsed = [h.title for h in blocks.headings if h.level == 2]
    assert [s.title for s in sections if s.title] == parsed
    summary = list(find_headings(lines, level=2).values())
    assert summary == parsed


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("## Goal", (2, "Goal")),
        ("##目标", (2, "目标")),  # models writing Chinese often leave out the space
        ("   ### Done ###", (3, "Done")),
        ("## C#", (2, "C#")),
        ("#tag", None),  # a hashtag, not a heading
        ("    ## code", None),
        ("####### seven", None),
        ("- ## in a bullet", None),
    ],
)
def test_one_heading_rule(line: str, expected: tuple[int, str] | None) -> None:
    assert heading_of(line) == expected


def test_summary_items_and_memory_entries_read_bullets_by_one_rule() -> None:
    """The same bullets (``•``, ``1、``) open an item in a summary section and an entry in a
    memory text; a sub-bullet stays with the summary item above it."""
    text = "- first\n• second\n1、 third\n2) fourth"
    assert [bullet_indent(line) for line in text.split("\n")] == [0, 0, 0, 0]
    summary = Summary.parse(f"## Goal\n{text}\n  - nested\n")
    assert summary.goal == ["- first", "• second", "1、 third", "2) fourth\n  - nested"]
    assert [item[0] for item in entry_items(text)] == ["first", "second", "third", "fourth"]


def test_a_tilde_fence_keeps_its_lines_in_one_summary_item() -> None:
    summary = Summary.parse("## Critical Context\n- the failing input:\n~~~\n- a\n- b\n~~~\n")
    assert summary.critical == ["- the failing input:\n~~~\n- a\n- b\n~~~"]
