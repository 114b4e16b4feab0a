"""Truncation at scale: the same output as the obvious whole-text algorithm, in bounded memory.

The cut looks only at the prefix it keeps; these tests hold it to a simple reference that
encodes and scans the whole text (the implementation before the cut became O(max_bytes)),
for random texts up to about a million characters and for one 50 MB text.
"""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.toolresults.truncation import (
    EXACT_LINE_COUNT_CHARS,
    NOTICE_BUDGET_BYTES,
    TruncationNotice,
    count_lines,
    format_truncation_notice,
    parse_truncation_notice,
    scrub_surrogates,
    truncate_parts_output,
    truncate_text_output,
)
from copaw_context.core.tools.file_reader import read_text_file

_SURROGATE = re.compile("[\ud800-\udfff]")
PATH = "/ws/tool_result/0123456789abcdef0123456789abcdef.txt"


def reference_truncate(
    text: str,
    start_line: int = 1,
    total_lines: int = 0,
    max_bytes: int = 51200,
    file_path: str | None = None,
    *,
    start_offset: int = 0,
) -> str:
    """The whole-text algorithm (UTF-8, a notice at the end being content)."""
    text = _SURROGATE.sub("\ufffd", text)
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    cut = max_bytes
    while (data[cut] & 0xC0) == 0x80:
        cut -= 1
    body = data[:cut].decode("utf-8")
    lower_bound = False
    if not total_lines:
        if len(text) <= EXACT_LINE_COUNT_CHARS:
            total_lines = start_line - 1 + count_lines(text)
        else:  # documented: counted in the first EXACT_LINE_COUNT_CHARS (or the excerpt)
            window = max(EXACT_LINE_COUNT_CHARS, len(body))
            total_lines = start_line - 1 + count_lines(text[:window])
            lower_bound = True
    newlines = body.count("\n")
    if newlines:
        next_line, next_offset = start_line + newlines, len(body) - body.rfind("\n") - 1
    else:
        next_line, next_offset = start_line, start_offset + len(body)
    notice = TruncationNotice(
        file_path=file_path,
        total_lines=total_lines,
        start_line=start_line,
        start_offset=start_offset,
        excerpt_bytes=cut,
        next_line=next_line,
        next_offset=next_offset,
        omitted_bytes=None if file_path is not None else len(data) - cut,
        total_is_lower_bound=lower_bound,
    )
    return body + "\n" + format_truncation_notice(notice)


pieces = st.one_of(
    st.text(max_size=40),  # includes lone surrogates
    st.sampled_from(["\n", "\r\n", "中文", "😀", "\udc80", "\ud83d\ude00", "x" * 50]),
)
fillers = st.sampled_from(["x", "ab\n", "中", "😀\n", "é\udcff", "line of log text\n", ""])


@settings(max_examples=80, deadline=None)
@given(
    head=st.lists(pieces, max_size=8).map("".join),
    filler=fillers,
    repeat=st.one_of(st.integers(0, 2000), st.integers(0, 400_000)),
    tail=st.lists(pieces, max_size=8).map("".join),
    max_bytes=st.one_of(st.integers(4, 64), st.integers(4, 70_000)),
    start=st.tuples(st.integers(1, 9), st.integers(0, 9)),
    total_lines=st.sampled_from([0, 0, 7, 10**6]),
    with_path=st.booleans(),
)
def test_cut_equals_the_whole_text_reference(
    head: str,
    filler: str,
    repeat: int,
    tail: str,
    max_bytes: int,
    start: tuple[int, int],
    total_lines: int,
    with_path: bool,
) -> None:
    text = head + filler * repeat + tail
    path = PATH if with_path else None
    kwargs = {"start_offset": start[1]}
    expected = reference_truncate(text, start[0], total_lines, max_bytes, path, **kwargs)
    got = truncate_text_output(
        text, start[0], total_lines, max_bytes, path, recut_notice=False, **kwargs
    )
    assert got == expected
    if parse_truncation_notice(scrub_surrogates(text)) is None:  # ends with no notice of ours
        assert truncate_text_output(text, start[0], total_lines, max_bytes, path, **kwargs) == got


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(
        st.one_of(st.text(max_size=30), st.text("ab\n中", min_size=200, max_size=3000)),
        min_size=1,
        max_size=6,
    ),
    max_bytes=st.integers(4, 4096),
    total_lines=st.sampled_from([0, 12]),
    with_path=st.booleans(),
)
def test_parts_are_cut_as_if_joined(
    parts: list[str], max_bytes: int, total_lines: int, with_path: bool
) -> None:
    path = PATH if with_path else None
    joined = "\n".join(parts)
    expected = truncate_text_output(joined, 1, total_lines, max_bytes, path, recut_notice=False)
    assert truncate_parts_output(parts, max_bytes, path, total_lines) == expected


def _fifty_megabytes() -> str:
    head = "start \udc80 中文 😀\n" + "first lines of the output\n" * 2000
    middle = ("INFO building module 中文模块 " + "x" * 40 + "\n") * 670_000
    return head + middle + "end of output \ud800\n"


def test_a_50_mb_text_is_cut_as_the_reference_cuts_it() -> None:
    text = _fifty_megabytes()
    assert len(text.encode("utf-8", "surrogatepass")) > 50_000_000
    got = truncate_text_output(text, max_bytes=51_200, file_path=PATH)
    assert got == reference_truncate(text, 1, 0, 51_200, PATH)
    lost = truncate_text_output(text, max_bytes=51_200)  # no file: the omitted size is exact
    assert lost == reference_truncate(text, 1, 0, 51_200, None)


def _peak_of(run: object) -> int:
    assert callable(run)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = run()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return peak - before


def test_the_cut_of_a_huge_text_uses_memory_for_the_excerpt_only() -> None:
    text = _fifty_megabytes()
    one_line = "y" * 10_000_000 + "中" * 100
    for big in (text, one_line):
        peak = _peak_of(lambda big=big: truncate_text_output(big, max_bytes=51_200, file_path=PATH))
        assert peak < 1_000_000, f"{peak} bytes for a 50 KB cut"


def test_an_uncounted_huge_text_says_at_least_and_stays_exact_where_it_matters() -> None:
    text = "row\n" * (EXACT_LINE_COUNT_CHARS // 2)  # twice the lines that are counted
    out = truncate_text_output(text, max_bytes=1000, file_path=PATH)
    body, notice = parse_truncation_notice(out) or pytest.fail("no notice")
    assert "contains at least 32769 lines in total." in out
    assert notice.total_is_lower_bound and notice.total_lines == EXACT_LINE_COUNT_CHARS // 4 + 1
    assert (notice.next_line, notice.next_offset) == (251, 0)  # the continuation is exact
    assert len(out.encode()) <= 1000 + NOTICE_BUDGET_BYTES
    recut = truncate_text_output(out, max_bytes=100)  # a harder cut keeps "at least"
    assert "contains at least 32769 lines in total." in recut
    assert truncate_text_output(text, total_lines=65537, max_bytes=1000, file_path=PATH) == (
        out.replace("at least 32769", "65537")
    )
    lost = truncate_text_output(text, max_bytes=1000)
    assert "it contains at least 32769 lines in total and the " in lost
    assert parse_truncation_notice(lost) is not None


async def test_an_at_least_notice_is_followed_back_exactly(tmp_path: Path) -> None:
    text = "".join(f"line {i} 中文 " + "z" * (i % 70) + "\n" for i in range(9000))
    assert len(text) > EXACT_LINE_COUNT_CHARS
    saved = tmp_path / "out.txt"
    saved.write_text(text, encoding="utf-8")
    first = truncate_text_output(text, max_bytes=20_000, file_path=str(saved))
    body, notice = parse_truncation_notice(first) or pytest.fail("no notice")
    assert notice.total_is_lower_bound
    collected = [body]
    line, offset = notice.next_line, notice.next_offset
    for _ in range(200):
        result = await read_text_file(
            str(saved), start_line=line, line_offset=offset, workspace=tmp_path, max_bytes=20_000
        )
        parsed = parse_truncation_notice(result.text)
        if parsed is None:
            collected.append(result.text)
            break
        collected.append(parsed[0])
        assert parsed[1].total_lines == text.count("\n")  # read_file counts as `wc -l` does
        line, offset = parsed[1].next_line, parsed[1].next_offset
    assert "".join(collected) == text


def test_an_at_least_notice_fits_the_budget_at_extremes() -> None:
    big = 10**15 - 1
    for path in ["中" * 133, "a" * 400, '"' * 200, None]:
        notice = TruncationNotice(path, big, big, big, big, big, big, None if path else big, True)
        rendered = "\n" + format_truncation_notice(notice)
        assert len(rendered.encode("utf-8")) <= NOTICE_BUDGET_BYTES
        assert parse_truncation_notice("x" + rendered) is None  # sizes disagree: not ours
