"""MEMORY.md and the daily logs: appends, sections, backups, the legacy name, prompt rendering."""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
import threading
from datetime import date, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import copaw_context
from copaw_context.core.errors import CopawContextError
from copaw_context.core.memory import MemoryFileError, MemoryFiles, render_memory_prompt
from copaw_context.core.memory.markdown import replace_section, section_titles
from copaw_context.core.toolresults.truncation import (
    TRUNCATION_NOTICE_MARKER,
    parse_truncation_notice,
)

NOON = datetime(2024, 5, 1, 12, 30, 5).astimezone()


def files_at(workspace: Path, moment: datetime = NOON) -> MemoryFiles:
    return MemoryFiles(workspace, clock=lambda: moment)


async def test_append_log_writes_todays_file_with_time_and_source(tmp_path: Path) -> None:
    files = files_at(tmp_path)
    path = await files.append_log("User prefers pnpm")
    await files.append_log("- first\n- second\n  continued", source="summariser")
    assert path == tmp_path / "memory" / "2024-05-01.md"
    assert path.read_text(encoding="utf-8") == (
        "# 2024-05-01\n\n"
        "- 12:30 [agent] User prefers pnpm\n"
        "- 12:30 [summariser] first\n"
        "- 12:30 [summariser] second\n"
        "  continued\n"
    )
    assert files.daily_logs() == [(date(2024, 5, 1), path)]


async def test_append_log_terminates_a_line_left_open_by_another_writer(tmp_path: Path) -> None:
    log = tmp_path / "memory" / "2024-05-01.md"
    log.parent.mkdir()
    log.write_text("written by the agent's own tool, no newline", encoding="utf-8")
    await files_at(tmp_path).append_log("next")
    assert log.read_text(encoding="utf-8").endswith("no newline\n- 12:30 [agent] next\n")


@pytest.mark.parametrize(
    ("text", "source", "words"),
    [
        ("", "agent", "empty"),
        ("  \n\n ", "agent", "empty"),
        ("x" * 20000, "agent", "over the"),
        ("ok", "../etc", "source tag"),
        ("ok", "Agent", "source tag"),
    ],
)
async def test_append_log_refuses_bad_input(
    tmp_path: Path, text: str, source: str, words: str
) -> None:
    with pytest.raises(MemoryFileError, match=words):
        await files_at(tmp_path).append_log(text, source=source)
    assert not (tmp_path / "memory" / "2024-05-01.md").exists()


async def test_edit_section_adds_replaces_and_backs_up(tmp_path: Path) -> None:
    files = files_at(tmp_path)
    assert await files.edit_section("Preferences", "- pnpm over npm") is None  # no old text
    backup = await files.edit_section("preferences", "- tabs, not spaces")
    await files.edit_section("Lessons", "- run migrations before tests")
    memory = tmp_path / "MEMORY.md"
    assert memory.read_text(encoding="utf-8") == (
        "## Preferences\n\n- pnpm over npm\n- tabs, not spaces\n\n"
        "## Lessons\n\n- run migrations before tests\n"
    )
    assert backup is not None and backup.parent == tmp_path / "memory" / "backups"
    assert backup.name.startswith("MEMORY.2024-05-01T123005")
    assert backup.read_text(encoding="utf-8") == "## Preferences\n\n- pnpm over npm\n"
    await files.edit_section("Preferences", "- yarn now", mode="replace")
    assert memory.read_text(encoding="utf-8") == (
        "## Preferences\n\n- yarn now\n\n## Lessons\n\n- run migrations before tests\n"
    )
    backups = sorted((tmp_path / "memory" / "backups").iterdir())
    assert len(backups) == 3 and len({b.name for b in backups}) == 3  # same second, own names
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


async def test_sections_inside_code_fences_and_deeper_headings_are_not_sections(
    tmp_path: Path,
) -> None:
    text = "# Memory\n\n## Tools\n\n```\n## not a heading\n```\n### Sub\n- x\n\n## Other\n- y\n"
    (tmp_path / "MEMORY.md").write_text(text, encoding="utf-8")
    files = files_at(tmp_path)
    await files.edit_section("Tools", "- z")
    updated = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    assert section_titles(updated) == ["Tools", "Other"]
    assert "### Sub\n- x\n- z\n\n## Other\n- y\n" in updated


async def test_legacy_memory_md_is_read_and_written_in_place(tmp_path: Path) -> None:
    legacy = tmp_path / "Memory.md"
    legacy.write_text("## Preferences\n\n- concise answers\n", encoding="utf-8")
    files = files_at(tmp_path)
    assert files.memory_path() == legacy
    assert "concise answers" in await files.read_memory()
    await files.edit_section("Preferences", "- answers in Chinese")
    assert not (tmp_path / "MEMORY.md").exists()
    assert legacy.read_text(encoding="utf-8").endswith("- concise answers\n- answers in Chinese\n")
    (tmp_path / "MEMORY.md").write_text("## New\n", encoding="utf-8")
    assert files.memory_path() == tmp_path / "MEMORY.md"  # the current name wins


@pytest.mark.parametrize(
    ("section", "content", "words"),
    [
        ("", "- x", "empty"),
        ("../../etc/passwd", "- x", "looks like a path"),
        ("/etc", "- x", "looks like a path"),
        ("a\\b", "- x", "looks like a path"),
        ("two\nlines", "- x", "one line"),
        ("x" * 81, "- x", "over 80"),
        ("##", "- x", "only '#'"),
        ("Tools", "", "empty"),
        ("Tools", "## Injected\n- x", "heading"),
        ("Tools", "# Title", "heading"),
        ("Tools", "x" * 70000, "over"),
    ],
)
async def test_edit_section_refuses_bad_input_and_writes_nothing(
    tmp_path: Path, section: str, content: str, words: str
) -> None:
    with pytest.raises(MemoryFileError, match=words) as caught:
        await files_at(tmp_path).edit_section(section, content)
    assert isinstance(caught.value, CopawContextError)
    assert not (tmp_path / "MEMORY.md").exists()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


async def test_edit_section_rejects_a_bad_mode_and_a_bad_memory_dir(tmp_path: Path) -> None:
    with pytest.raises(MemoryFileError, match="mode"):
        await files_at(tmp_path).edit_section("Tools", "- x", mode="append")  # type: ignore[arg-type]
    for bad in ("../memory", "/tmp/memory", ""):
        with pytest.raises(MemoryFileError, match="relative"):
            MemoryFiles(tmp_path, bad)
    with pytest.raises(MemoryFileError, match="datetime.date"):
        files_at(tmp_path).daily_path("2024-05-01/../../x")  # type: ignore[arg-type]


async def test_concurrent_edits_from_threads_lose_nothing(tmp_path: Path) -> None:
    def worker(number: int) -> None:
        files = MemoryFiles(tmp_path)
        for item in range(5):
            asyncio.run(files.edit_section("Facts", f"- fact {number}-{item}"))
            asyncio.run(files.append_log(f"log {number}-{item}"))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    memory = (tmp_path / "MEMORY.md").read_text(encoding="utf-8")
    logs = "".join(p.read_text(encoding="utf-8") for _, p in MemoryFiles(tmp_path).daily_logs())
    for number in range(3):
        for item in range(5):
            assert memory.count(f"- fact {number}-{item}\n") == 1
            assert logs.count(f"log {number}-{item}\n") == 1


def test_render_memory_prompt_is_bounded_and_names_the_file() -> None:
    text = "".join(f"- fact number {n}: 用户偏好 {n}\n" for n in range(2000))
    rendered = render_memory_prompt(text, "/ws/MEMORY.md", 4000)
    assert len(rendered.encode("utf-8")) <= 4000
    assert TRUNCATION_NOTICE_MARKER in rendered
    parsed = parse_truncation_notice(rendered)
    assert parsed is not None
    body, notice = parsed
    assert notice.file_path == "/ws/MEMORY.md" and notice.start_line == 1
    assert text.startswith(body)
    assert render_memory_prompt("short\n", "/ws/MEMORY.md", 4000) == "short\n"
    with pytest.raises(ValueError, match="at least"):
        render_memory_prompt(text, "/ws/MEMORY.md", 500)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=3000), st.integers(min_value=1124, max_value=4000))
def test_render_memory_prompt_never_exceeds_its_limit(text: str, limit: int) -> None:
    rendered = render_memory_prompt(text, "MEMORY.md", limit)
    assert len(rendered.encode("utf-8")) <= limit


async def test_render_for_prompt_reads_the_file(tmp_path: Path) -> None:
    files = files_at(tmp_path)
    assert await files.render_for_prompt(4000) == ""
    (tmp_path / "MEMORY.md").write_text("x\n" * 5000, encoding="utf-8")
    rendered = await files.render_for_prompt(2000)
    assert f'file_path="{tmp_path / "MEMORY.md"}"' in rendered


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.sampled_from(["Tools", "Prefs", "Lessons", "tools"]), max_size=6),
    st.text(alphabet="ab -\n", max_size=40),
)
def test_replace_section_keeps_other_sections(titles: list[str], content: str) -> None:
    text = "## Keep\n\n- kept\n"
    for title in titles:
        body = content.strip("\n")
        if any(line.lstrip().startswith("#") for line in body.split("\n")):
            continue
        text = replace_section(text, title, body, add=True)
    assert text.startswith("## Keep\n\n- kept\n")
    folded = [t.casefold() for t in section_titles(text)]
    assert len(folded) == len(set(folded))


def test_the_memory_package_imports_no_agentscope_even_indirectly() -> None:
    package = Path(copaw_context.__file__).parent
    seen: set[str] = set()
    todo = ["copaw_context.core.memory"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = package.parent / (name.replace(".", "/") + ".py")
        if not path.exists():
            path = package.parent / name.replace(".", "/") / "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
                for _ in range(max(0, node.level - 1)):
                    base = base.rsplit(".", 1)[0]
                module = (
                    node.module or ""
                    if node.level == 0
                    else f"{base}.{node.module}"
                    if node.module
                    else base
                )
                targets = [module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                assert not target.startswith("agentscope"), f"{name} imports {target}"
                if target.startswith("copaw_context."):
                    assert not target.startswith("copaw_context.agentscope2"), name
                    assert target.startswith("copaw_context.core"), f"{name} imports {target}"
                    todo.append(target)
    script = (
        "import sys, types\n"
        f"package = types.ModuleType('copaw_context'); package.__path__ = [{str(package)!r}]\n"
        "sys.modules['copaw_context'] = package\n"
        "import copaw_context.core.memory\n"
        "assert not [m for m in sys.modules if m.startswith('agentscope')], 'agentscope loaded'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
