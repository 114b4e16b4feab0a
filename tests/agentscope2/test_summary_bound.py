"""fit_summary: any summary within its size budget, fast on a megabyte of short lines."""

from __future__ import annotations

import pytest

from copaw_context.core.summary import (
    build_compactor_request,
    extractive_summary,
    fit_summary,
    size_retry_note,
    validate_summary,
)
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from tests.helpers import outline, six_section_summary


def test_a_summary_that_fits_is_unchanged() -> None:
    summary = six_section_summary(10)
    assert fit_summary(summary, max_chars=len(summary)) == summary


@pytest.mark.parametrize("max_chars", [2000, 16000])
def test_a_megabyte_of_short_lines_is_trimmed_to_the_budget(max_chars: int) -> None:
    summary = six_section_summary(17_000)  # ~1 MB: quadratic trimming would take minutes
    fitted = fit_summary(summary, max_chars=max_chars)
    assert len(fitted) <= max_chars
    assert validate_summary(fitted) is None
    assert "Ship the parser fix for ticket PARSE-17" in fitted  # the original task
    assert "Older items were left out to fit the summary size limit" in fitted
    assert "Finished step 16999" in fitted and "Finished step 00000" not in fitted  # oldest out


def test_items_too_long_to_leave_out_are_cut() -> None:
    task = "Port the whole service to Rust. " + "Keep every endpoint. " * 2500  # ~50 KB
    summary = six_section_summary(5).replace("Ship the parser fix for ticket PARSE-17", task)
    fitted = fit_summary(summary, max_chars=2000, language="zh")
    assert len(fitted) <= 2000
    assert "Port the whole service to Rust." in fitted and "more characters omitted" in fitted
    _, sections = outline(fitted)
    assert [title for title, _ in sections][0] == "目标" and len(sections) == 6


def test_extractive_summary_over_a_megabyte_previous_summary_stays_in_budget() -> None:
    messages = [TranscriptMessage("user", "user", (TranscriptPart("text", "Never push."),))]
    previous = six_section_summary(17_000)
    summary = extractive_summary(messages, previous_summary=previous, max_chars=2000)
    assert len(summary) <= 2000
    assert "Never push." in summary and "Ship the parser fix for ticket PARSE-17" in summary


def test_the_request_states_the_size_and_the_retry_note_both_numbers() -> None:
    assert "- The whole summary must be at most 1234 characters long." in (
        build_compactor_request("user:\nhi", max_chars=1234)
    )
    assert "at most" not in build_compactor_request("user:\nhi")
    zh = build_compactor_request("用户:\n你好", language="zh", max_chars=900)
    assert "- 整份摘要不得超过 900 个字符。" in zh
    note = size_retry_note(100_000, 2000)
    assert note.startswith(
        "Your previous answer was 100000 characters; the summary must be at most 2000 characters."
    )
    assert "100000 个字符" in size_retry_note(100_000, 2000, language="zh")
