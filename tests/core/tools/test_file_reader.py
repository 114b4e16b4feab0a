"""Tests for copaw_context.core.tools.file_reader."""

from __future__ import annotations

import asyncio
import itertools
import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from copaw_context.core.toolresults.truncation import (
    TRUNCATION_NOTICE_MARKER,
    parse_truncation_notice,
    truncate_text_output,
)
from copaw_context.core.tools.file_reader import ReadResult, is_path_allowed, read_text_file

_names = itertools.count()

pieces = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
    st.sampled_from(["\n", "\r\n", "中文", "😀", "é", TRUNCATION_NOTICE_MARKER, "\n\n"]),
    st.text("y", min_size=50, max_size=700),  # a line longer than the limit
)
file_texts = st.lists(pieces, min_size=1, max_size=10).map("".join)


def _write(directory: Path, text: str, name: str | None = None) -> Path:
    path = directory / (name or f"f{next(_names)}.txt")
    path.write_bytes(text.encode("utf-8"))  # keep "\r\n" exactly
    return path


async def _read(path: Path | str, workspace: Path, **kwargs: object) -> ReadResult:
    return await read_text_file(str(path), workspace=workspace, **kwargs)  # type: ignore[arg-type]


def _body(result: ReadResult) -> str:
    if result.next_line is None:
        assert parse_truncation_notice(result.text) is None
        return result.text
    if not result.truncated:  # all the lines asked for: a short notice, no "truncated"
        body, _, notice = result.text.rpartition("\n[")
        assert "truncat" not in notice.lower() and parse_truncation_notice(result.text) is None
        assert notice.startswith("Line") and f" of {result.total_lines} shown in full." in notice
        assert notice.endswith(f'file_path="{result.path}" start_line={result.next_line}.]')
        assert result.next_offset == 0
        return body
    parsed = parse_truncation_notice(result.text)
    assert parsed is not None, result.text
    body, notice = parsed
    assert (notice.next_line, notice.next_offset) == (result.next_line, result.next_offset)
    assert notice.file_path == str(result.path)
    assert notice.total_lines == result.total_lines
    return body


# ---------------------------------------------------------------- continuation
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=file_texts, max_bytes=st.integers(4, 300))
def test_following_notices_rebuilds_the_file_exactly(
    tmp_path: Path, text: str, max_bytes: int
) -> None:
    path = _write(tmp_path, text)
    out = truncate_text_output(text, 1, 0, max_bytes, str(path))
    parsed = parse_truncation_notice(out)
    if parsed is None:
        assert out == text
        return
    body, notice = parsed
    collected = [body]
    position = (notice.next_line, notice.next_offset)
    for _ in range(len(text) + 2):
        result = asyncio.run(
            read_text_file(
                str(path),
                start_line=position[0],
                line_offset=position[1],
                workspace=tmp_path,
                max_bytes=max_bytes,
            )
        )
        assert result.ok, result.text
        assert len(result.text.encode()) <= max_bytes + 1024
        collected.append(_body(result))
        if result.next_line is None:
            break
        assert result.truncated
        assert result.next_offset is not None
        position = (result.next_line, result.next_offset)
    assert "".join(collected) == text


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=file_texts, step=st.integers(1, 4), max_bytes=st.integers(4, 400))
def test_line_ranges_and_their_notices_rebuild_the_file(
    tmp_path: Path, text: str, step: int, max_bytes: int
) -> None:
    path = _write(tmp_path, text)
    collected = []
    line, offset, end = 1, 0, step
    for _ in range(2 * len(text) + 4):
        result = asyncio.run(
            read_text_file(str(path), line, end, offset, workspace=tmp_path, max_bytes=max_bytes)
        )
        assert result.ok, result.text
        collected.append(_body(result))
        if result.next_line is None:
            break
        assert result.next_offset is not None
        if not result.truncated:
            assert result.next_line == end + 1 and result.next_offset == 0
            end = result.next_line + step - 1
        line, offset = result.next_line, result.next_offset
    assert "".join(collected) == text


# ---------------------------------------------------------------- slicing
async def test_line_range_is_cat_like_and_clamped(tmp_path: Path) -> None:
    path = _write(tmp_path, "one\ntwo\r\nthree\nfour", "a.txt")
    result = await _read(path, tmp_path, start_line=2, end_line=3)
    assert result.text == (
        "two\r\nthree\n\n[Lines 2-3 of 4 shown in full. To read on, call `read_file` with "
        f'file_path="{path.resolve()}" start_line=4.]'
    )
    assert parse_truncation_notice(result.text) is None
    assert not result.truncated and (result.next_line, result.next_offset) == (4, 0)
    clamped = await _read(path, tmp_path, start_line=3, end_line=900)
    assert clamped.text == "three\nfour" and clamped.next_line is None
    assert clamped.total_lines == 4


async def test_line_range_larger_than_limit_is_cut(tmp_path: Path) -> None:
    text = "".join(f"row {i:03}\n" for i in range(1, 201))
    path = _write(tmp_path, text, "rows.txt")
    result = await _read(path, tmp_path, start_line=10, end_line=20, max_bytes=24)
    assert result.truncated and len(result.text.encode()) <= 24 + 1024
    body = _body(result)
    assert body == "row 010\nrow 011\nrow 012\n"
    assert "covers the next 24 bytes" in result.text
    assert (result.next_line, result.next_offset) == (13, 0)
    cut_inside = await _read(path, tmp_path, start_line=10, end_line=20, max_bytes=30)
    assert _body(cut_inside) == "row 010\nrow 011\nrow 012\nrow 01"
    assert (cut_inside.next_line, cut_inside.next_offset) == (13, 6)


async def test_reading_up_to_the_empty_last_line_needs_no_notice(tmp_path: Path) -> None:
    path = _write(tmp_path, "a\nb\n", "t.txt")
    result = await _read(path, tmp_path, end_line=2)
    assert result.text == "a\nb\n" and result.next_line is None and result.total_lines == 2
    last = await _read(path, tmp_path, start_line=3)
    assert not last.ok and last.text == (
        f"Error: start_line=3 is past the end of {path.resolve()}: the file has 2 lines. "
        "Use start_line between 1 and 2."
    )


async def test_line_offset_skips_characters(tmp_path: Path) -> None:
    path = _write(tmp_path, "héllo wörld\nnext\n", "u.txt")
    result = await _read(path, tmp_path, start_line=1, line_offset=6, end_line=1)
    assert _body(result) == "wörld\n"
    at_end = await _read(path, tmp_path, start_line=1, line_offset=11, end_line=1)
    assert _body(at_end) == "\n"
    past = await _read(path, tmp_path, start_line=1, line_offset=12)
    assert not past.ok
    assert "line_offset=12 is past the end of line 1" in past.text
    assert "between 0 and 11" in past.text


async def test_long_single_line_is_cut_with_offset(tmp_path: Path) -> None:
    path = _write(tmp_path, "[" + ",".join(str(i) for i in range(5000)) + "]", "m.json")
    result = await _read(path, tmp_path, max_bytes=1000)
    assert result.truncated and (result.next_line, result.next_offset) == (1, 1000)
    assert result.text.endswith(
        f'file_path="{path.resolve()}" start_line=1 line_offset=1000 to read more.'
    )


async def test_exempt_extension_uses_its_own_limit(tmp_path: Path) -> None:
    text = "# Title\n" + "word " * 400 + "\n"
    md = _write(tmp_path, text, "NOTES.MD")
    txt = _write(tmp_path, text, "notes.txt")
    kwargs = {"max_bytes": 100, "exempt_max_bytes": 5000}
    assert (await _read(md, tmp_path, **kwargs)).text == text
    assert (await _read(txt, tmp_path, **kwargs)).truncated
    assert (await _read(md, tmp_path, max_bytes=100)).truncated  # no exempt limit given
    other = await _read(txt, tmp_path, exempt_extensions=["TXT"], **kwargs)
    assert other.text == text


async def test_start_past_end_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "".join(f"{i}\n" for i in range(119)), "x.txt")
    result = await _read(path, tmp_path, start_line=900)
    assert not result.ok and result.path is None
    assert result.text == (
        f"Error: start_line=900 is past the end of {path.resolve()}: the file has 119 lines. "
        "Use start_line between 1 and 119."
    )


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"start_line": 0}, "start_line=0 is invalid"),
        ({"end_line": -3}, "end_line=-3 is invalid"),
        ({"line_offset": -1}, "line_offset=-1 is invalid"),
        ({"start_line": 5, "end_line": 2}, "end_line=2 is before start_line=5"),
        ({"start_line": "3"}, "start_line must be a whole number"),
        ({"end_line": True}, "end_line must be a whole number"),
    ],
)
async def test_bad_arguments_give_error_text(
    tmp_path: Path, kwargs: dict[str, object], fragment: str
) -> None:
    path = _write(tmp_path, "a\nb\n", "a.txt")
    result = await _read(path, tmp_path, **kwargs)
    assert not result.ok and result.text.startswith("Error: ") and fragment in result.text


async def test_bad_configuration_raises(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        await _read("a.txt", tmp_path, max_bytes=2)
    with pytest.raises(ValueError, match="exempt_max_bytes"):
        await _read("a.txt", tmp_path, exempt_max_bytes=0)
    with pytest.raises(ValueError, match="ASCII-compatible"):
        await _read("a.txt", tmp_path, encoding="utf-16")


# ---------------------------------------------------------------- paths
async def test_relative_path_resolves_against_workspace(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = _write(tmp_path / "sub", "hello\n", "r.txt")
    result = await _read("sub/r.txt", tmp_path)
    assert result.ok and result.text == "hello\n" and result.path == path.resolve()


async def test_outside_path_and_symlink_escape_are_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    secret = _write(tmp_path, "secret\n", "secret.txt")
    (workspace / "link.txt").symlink_to(secret)
    (workspace / "dangling.txt").symlink_to(tmp_path / "nowhere.txt")
    for target in (str(secret), "../secret.txt", "link.txt", "dangling.txt", "../nowhere.txt"):
        result = await _read(target, workspace)
        assert not result.ok, target
        assert "outside the directories read_file may read" in result.text
    allowed = await _read(str(secret), workspace, extra_roots=[tmp_path])
    assert allowed.ok and allowed.text == "secret\n"


async def test_symlink_inside_workspace_is_followed(tmp_path: Path) -> None:
    real = _write(tmp_path, "data\n", "real.txt")
    (tmp_path / "alias.txt").symlink_to(real)
    result = await _read("alias.txt", tmp_path)
    assert result.ok and result.path == real.resolve()


async def test_missing_directory_binary_and_undecodable(tmp_path: Path) -> None:
    missing = await _read("nope.txt", tmp_path)
    assert not missing.ok and "does not exist" in missing.text and "nope.txt" in missing.text
    (tmp_path / "d").mkdir()
    directory = await _read("d", tmp_path)
    assert not directory.ok and "is a directory" in directory.text
    (tmp_path / "b.bin").write_bytes(b"PK\x03\x04\x00\x00data")
    binary = await _read("b.bin", tmp_path)
    assert not binary.ok and "binary" in binary.text and "b.bin" in binary.text
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    latin = await _read("latin.txt", tmp_path)
    assert not latin.ok and "not valid utf-8" in latin.text
    decoded = await _read("latin.txt", tmp_path, encoding="latin-1")
    assert decoded.ok and decoded.text == "café\n"
    empty = await _read("", tmp_path)
    assert not empty.ok and "empty" in empty.text


async def test_files_under_text_dirs_are_text_even_with_nul_bytes(tmp_path: Path) -> None:
    saved = tmp_path / "tool_result"
    saved.mkdir()
    data = "a\x00b\x00\n" * 10
    for path in (saved / "out.txt", tmp_path / "elsewhere.bin"):
        path.write_text(data)
    inside = await _read(saved / "out.txt", tmp_path, text_dirs=[saved])
    assert inside.ok and inside.text == data
    relative = await _read("tool_result/out.txt", tmp_path, text_dirs=[Path("tool_result")])
    assert relative.ok and relative.text == data  # relative folders: inside the workspace
    other = await _read(tmp_path / "elsewhere.bin", tmp_path, text_dirs=[saved])
    assert not other.ok and "binary" in other.text


async def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    result = await _read("pipe", tmp_path)
    assert not result.ok and "not a regular file" in result.text


def test_is_path_allowed(tmp_path: Path) -> None:
    inner = tmp_path / "ws"
    inner.mkdir()
    assert is_path_allowed(inner / "a" / "b.txt", inner, ())
    assert not is_path_allowed(inner / ".." / "x.txt", inner, ())
    assert is_path_allowed(tmp_path / "x.txt", inner, (tmp_path,))


# ---------------------------------------------------------------- large files
async def test_large_file_is_streamed(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    head = "".join(f"line {i}\n" for i in range(1, 2001)).encode()
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(200 * 1024 * 1024)  # sparse NUL tail: one huge last line
    tracemalloc.start()
    try:
        result = await _read(path, tmp_path, start_line=1, end_line=100)
        tail = await _read(path, tmp_path, start_line=2001, line_offset=150_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024
    assert result.ok and result.total_lines == 2001
    assert _body(result) == "".join(f"line {i}\n" for i in range(1, 101))
    assert (result.next_line, result.next_offset) == (101, 0)
    assert tail.ok and tail.truncated and _body(tail) == "\x00" * 50000
    assert (tail.next_line, tail.next_offset) == (2001, 150_050_000)


async def test_line_count_cache_follows_file_changes(tmp_path: Path) -> None:
    path = _write(tmp_path, "a\nb\nc\n", "settled.txt")
    os.utime(path, (1_000_000, 1_000_000))  # settled: its line count may be cached
    first = await _read(path, tmp_path, start_line=2, end_line=2)
    assert first.total_lines == 3 and _body(first) == "b\n"
    assert (await _read(path, tmp_path, start_line=4)).text.startswith("Error: start_line=4")
    path.write_bytes(b"a\nb\nc\nd\ne\n")
    os.utime(path, (2_000_000, 2_000_000))
    second = await _read(path, tmp_path, start_line=5)
    assert second.ok and second.total_lines == 5 and second.text == "e\n"


@pytest.mark.parametrize(
    ("kwargs", "lines"),
    [
        ({"start_line": "2", "end_line": "3"}, "b\nc\n"),
        ({"start_line": " 2 ", "end_line": 3.0}, "b\nc\n"),
        ({"start_line": 2.0, "end_line": "3.0"}, "b\nc\n"),
        ({"start_line": "2", "line_offset": "1"}, "\nc\nd\n"),
        ({"start_line": "+3", "line_offset": 0.0}, "c\nd\n"),
    ],
)
async def test_the_tool_accepts_whole_numbers_as_text_or_floats(
    tmp_path: Path, kwargs: dict[str, object], lines: str
) -> None:
    """1.x passes the model's arguments through unconverted (issue 17 item 16)."""
    from copaw_context.core.tools.read_tool import ReadFileTool

    path = _write(tmp_path, "a\nb\nc\nd\n", "a.txt")
    result, entry = await ReadFileTool(tmp_path).read(str(path), **kwargs)  # type: ignore[arg-type]
    assert result.ok, result.text
    assert result.text.startswith(lines) and entry is not None


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"start_line": "2.5"}, "start_line must be a whole number (such as 2), got '2.5'"),
        ({"end_line": "abc"}, "end_line must be a whole number (such as 2), got 'abc'"),
        ({"line_offset": 1.5}, "line_offset must be a whole number (such as 2), got 1.5"),
        ({"start_line": "0"}, "start_line=0 is invalid"),
        ({"start_line": True}, "start_line must be a whole number"),
    ],
)
async def test_the_tool_refuses_other_numbers_clearly(
    tmp_path: Path, kwargs: dict[str, object], fragment: str
) -> None:
    from copaw_context.core.tools.read_tool import ReadFileTool

    path = _write(tmp_path, "a\nb\n", "a.txt")
    result, entry = await ReadFileTool(tmp_path).read(str(path), **kwargs)  # type: ignore[arg-type]
    assert not result.ok and entry is None and fragment in result.text
