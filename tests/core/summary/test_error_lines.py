"""The decisive error line of each toolchain family, on realistic output (EN and ZH)."""

from __future__ import annotations

import pytest

from copaw_context.core.summary import carry_verbatim, extract_facts
from copaw_context.core.summary.errors import (
    DECISIVE,
    OTHER,
    WRAPPER,
    keep_newest,
    most_telling,
    scan_errors,
)
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from tests.error_families import FAMILIES, facts_of


@pytest.mark.parametrize(
    ("family", "output", "decisive", "named"), FAMILIES, ids=[f[0] for f in FAMILIES]
)
def test_the_decisive_error_line_of_each_family_is_carried(
    family: str, output: str, decisive: list[str], named: str
) -> None:
    lines, outcome = facts_of(output)
    for line in decisive:
        assert line.strip() in lines, f"{family}: {line!r} not in {lines}"
    assert outcome.startswith("shell(build): error — ") and named in outcome, (family, outcome)
    summary = (
        "## Goal\nfix it\n## Constraints & Preferences\n- (none)\n## Progress\n"
        "### Done\n- (none)\n### In Progress\n- (none)\n### Blocked\n- (none)\n"
        "## Key Decisions\n- (none)\n## Next Steps\n1. fix\n## Critical Context\n- (none)\n"
    )
    facts = extract_facts(
        [TranscriptMessage("user", "user", (TranscriptPart("tool_result", output, "sh", "c"),))]
    )
    carried = carry_verbatim(summary, facts)
    for line in decisive:
        assert line.strip() in carried


@pytest.mark.parametrize(
    "line",
    [
        "npm ERR! code ELIFECYCLE",
        "Tests:       1 failed, 11 passed, 12 total",
        "make: *** [Makefile:23: parser.o] Error 1",
        "collect2: error: ld returned 1 exit status",
        'error: could not compile `app` (bin "app") due to 1 previous error',
        "FAILURE: Build failed with an exception.",
        "Exit code: 1",
        " ELIFECYCLE  Command failed with exit code 2.",
        "FAIL\texample.com/calc\t0.002s",
        "✖ 2 problems (1 error, 1 warning)",
    ],
)
def test_wrappers_and_tallies_rank_below_the_error(line: str) -> None:
    ((found,),) = [scan_errors(line)]
    assert found.rank == WRAPPER
    found = scan_errors(f"src/a.ts(1,1): error TS2322: bad\n{line}")
    assert most_telling(found).endswith("TS2322: bad")


def test_source_and_prose_are_not_decisive() -> None:
    text = "Expected: a list\nThe error handling lives in errors.py\nwe never raise here"
    assert scan_errors(text) == []
    assert [e.rank for e in scan_errors("E   assert 1 == 2\nExpected: 2")] == [DECISIVE, OTHER]


def test_past_the_limit_the_newest_are_kept_wrappers_first_out_and_counted() -> None:
    lines = [f"src/m{i}.ts(1,1): error TS2322: bad {i}" for i in range(5)] + ["npm ERR! code 2"]
    kept, omitted = keep_newest(lines, 4)
    assert kept == lines[1:5] and omitted == 2
    log = "\n".join(f"src/m{i}.ts(1,1): error TS2322: bad {i}" for i in range(50))
    facts = extract_facts(
        [TranscriptMessage("user", "user", (TranscriptPart("tool_result", log, "sh", "c"),))]
    )
    assert len(facts.error_lines) == 40 and facts.error_lines_omitted == 10
    assert facts.error_lines[-1].endswith("bad 49") and facts.error_lines[0].endswith("bad 10")


def test_lines_whose_lower_case_is_longer_do_not_shift_the_rows() -> None:
    text = "İstanbul build\nsrc/a.ts(1,1): error TS2322: bad\nİİİ done"
    assert [e.text for e in scan_errors(text)] == ["src/a.ts(1,1): error TS2322: bad"]
    chained = 'ok\nTraceback (most recent call last):\n  File "a.py", line 1\nHttp404: gone'
    assert [e.rank for e in scan_errors(chained)] == [OTHER, DECISIVE]


def test_status_bullets_and_search_hits_are_not_errors() -> None:
    text = (
        "● nginx.service - A high performance web server\n"
        "main.go:12:func main() {\n"
        "  12:7  warning  Unexpected console statement  no-console"
    )
    assert scan_errors(text) == []


def test_a_bare_received_heading_is_not_an_error_line() -> None:
    text = '  ● A › b\n\n    Received:\n\n    "Buttons must have discernible text (button-name)"'
    assert [e.text for e in scan_errors(text)] == [
        "● A › b",
        '"Buttons must have discernible text (button-name)"',
    ]
