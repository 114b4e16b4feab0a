"""The error block keeps errors (issue 21 item 2): the lines that are errors and the one
location line each needs, deduplicated; never test tallies, progress output or wrappers
once the error itself is kept. English and Chinese output alike."""

from __future__ import annotations

import pytest

from copaw_context.core.summary import extract_facts, extractive_summary, find_junk
from copaw_context.core.summary.error_block import is_error_noise
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart


def _run(*outputs: str) -> list[TranscriptMessage]:
    messages = [TranscriptMessage("user", "user", (TranscriptPart("text", "Build it."),))]
    for n, output in enumerate(outputs):
        call = TranscriptPart("tool_call", '{"command": "make"}', "shell", f"c{n}")
        result = TranscriptPart("tool_result", output, "shell", f"c{n}", True)
        messages.append(TranscriptMessage("assistant", "bot", (call,)))
        messages.append(TranscriptMessage("user", "user", (result,)))
    return messages


PYTEST = """============================= test session starts ==============================
tests/test_api.py ..F.....................                                [100%]
=================================== FAILURES ===================================
    def test_get():
>       assert get(1) == 2
E       assert 3 == 2
tests/test_api.py:5: AssertionError
FAILED tests/test_api.py::test_get - assert 3 == 2
========================= 1 failed, 22 passed in 0.51s ========================="""

NPM = """npm ERR! Lifecycle script `build` failed with error:
npm ERR! Error: command failed
npm ERR!   in workspace: @app/web
npm ERR!   at location: /repo/packages/web
src/main.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'."""

JEST = """FAIL src/components/IconButton.test.tsx
  ● IconButton › has no violations

    expect(received).toHaveNoViolations(expected)

    Expected the HTML found at $('.icon-btn') to have no violations:

    Received:

    "Buttons must have discernible text (button-name)"

Test Suites: 1 failed, 12 passed, 13 total
Tests:       1 failed, 22 passed, 23 total"""

TRACEBACK = """Traceback (most recent call last):
  File "/app/scripts/export.py", line 31, in <module>
    main()
  File "/app/scripts/export.py", line 12, in main
    row['created_at']
KeyError: 'created_at'
退出码: 1"""


@pytest.mark.parametrize(
    ("output", "kept", "gone"),
    [
        (
            PYTEST,
            ["E       assert 3 == 2", "FAILED tests/test_api.py::test_get - assert 3 == 2"],
            ["1 failed, 22 passed", "..F....", "[100%]"],
        ),
        (
            NPM,
            ["src/main.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'."],
            ["in workspace", "at location", "command failed", "Lifecycle script"],
        ),
        (
            JEST,
            [
                "● IconButton › has no violations",
                "expect(received).toHaveNoViolations(expected)",
                '"Buttons must have discernible text (button-name)"',
            ],
            ["Test Suites:", "Tests:"],
        ),
        (
            TRACEBACK,
            # the exception, the one frame that says where, the status it ended with
            [
                'File "/app/scripts/export.py", line 12, in main',
                "KeyError: 'created_at'",
                "退出码: 1",
            ],
            ["Traceback (most recent call last)", "line 31, in <module>"],
        ),
    ],
)
def test_only_the_error_and_its_location_are_kept(
    output: str, kept: list[str], gone: list[str]
) -> None:
    lines = extract_facts(_run(output)).error_lines
    for line in kept:
        assert line in lines, (line, lines)
    for fragment in gone:
        assert not any(fragment in line for line in lines), (fragment, lines)
    if "File " in kept[0]:
        assert lines.index(kept[0]) + 1 == lines.index(kept[1])  # the location, then the error


@pytest.mark.parametrize(
    "tally", ["1 failed in 5.12s", "3 failed in 12.0 s", "1 failed in 250ms", "2 failed, 1 passed"]
)
def test_a_test_tally_beside_the_error_is_noise(tally: str) -> None:
    # the chain benchmark's pytest timeout: "E   Failed: Timeout >5.0s", then "1 failed in 5.12s"
    assert is_error_noise(tally)
    assert not is_error_noise("1 failed because the database is down")


def test_a_wrapper_is_kept_when_it_is_all_a_command_said() -> None:
    lines = extract_facts(_run("make: *** [Makefile:23: all] Error 2")).error_lines
    assert lines == ("make: *** [Makefile:23: all] Error 2",)


def test_wrappers_go_once_any_output_shows_the_error_and_repeats_count_once() -> None:
    facts = extract_facts(_run("make: *** [Makefile:23: all] Error 2", PYTEST, PYTEST))
    assert facts.error_lines == (
        "E       assert 3 == 2",
        "tests/test_api.py:5: AssertionError",
        "FAILED tests/test_api.py::test_get - assert 3 == 2",
    )


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_summary_carries_each_error_once_and_no_noise(language: str) -> None:
    summary = extractive_summary(_run(PYTEST, NPM, JEST, TRACEBACK), language=language)  # type: ignore[arg-type]
    assert find_junk(summary, language) == []  # type: ignore[arg-type]
    assert summary.count("KeyError: 'created_at'") == 1
    assert summary.count("E       assert 3 == 2") == 1
    assert "1 failed, 22 passed" not in summary and "in workspace" not in summary
