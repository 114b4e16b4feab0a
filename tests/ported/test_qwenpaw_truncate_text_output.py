"""Ports QwenPaw's truncate_text_output boundary cases to ours (host-neutral, run once under
2.x): at the limit, one byte over, a multi-byte character straddling the limit, CRLF, a text
that ends like a notice but is not ours."""

from __future__ import annotations

import pytest

from copaw_context.core.toolresults.truncation import parse_truncation_notice, truncate_text_output


@pytest.mark.parametrize("size", [1000, 1001])
def test_at_and_over_limit(size: int) -> None:
    text = "a" * size
    out = truncate_text_output(text, max_bytes=1000, file_path="tool_result/x.txt")
    if size <= 1000:
        assert out == text
    else:
        parsed = parse_truncation_notice(out)
        assert (
            parsed is not None and parsed[0] == "a" * 1000 or parsed[0].rstrip("\n") == "a" * 1000
        )


@pytest.mark.parametrize("char", ["\u00e9", "\u4e2d", "\U0001f600"])
def test_multibyte_straddling_limit(char: str) -> None:
    text = "a" * 999 + char * 10
    out = truncate_text_output(text, max_bytes=1000, file_path="tool_result/x.txt")
    parsed = parse_truncation_notice(out)
    assert parsed is not None
    body, notice = parsed
    assert "\ufffd" not in body
    assert len(body.rstrip("\n").encode()) <= 1000
    assert text.startswith((body.rstrip("\n"), body))
    # the continuation point is exactly where the body stops
    kept = body if text.startswith(body) else body.rstrip("\n")
    assert notice.next_line == 1 and notice.next_offset == len(kept)


def test_crlf_continuation() -> None:
    text = "".join(f"row {i}\r\n" for i in range(500))
    out = truncate_text_output(text, max_bytes=1000, file_path="tool_result/x.txt")
    body, notice = parse_truncation_notice(out)  # type: ignore[misc]
    kept = body if text.startswith(body) else body.rstrip("\n")
    lines = text.split("\n")
    rest = "\n".join(lines[notice.next_line - 1 :])[notice.next_offset :]
    assert kept + rest == text


def test_text_that_ends_like_a_notice_but_is_not_ours() -> None:
    text = "x" * 2000 + "\n<<<TRUNCATED>>>\nThe output above was truncated.\n"
    out = truncate_text_output(text, max_bytes=1000, file_path="tool_result/x.txt")
    body, notice = parse_truncation_notice(out)  # type: ignore[misc]
    assert notice.file_path == "tool_result/x.txt"
