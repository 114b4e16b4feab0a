"""The cheap checks in front of fact extraction's patterns never lose a fact."""

from __future__ import annotations

import bisect
import itertools
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.summary import errors, extract_facts, result_facts, verbatim
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart


def _paths_of(output: str) -> tuple[str, ...]:
    result = TranscriptPart("tool_result", output, "shell", "c1")
    return extract_facts([TranscriptMessage("user", "user", (result,))]).file_paths


def test_offloaded_file_paths_in_any_case_and_quoting() -> None:
    assert _paths_of("Full output SAVED TO /var/tmp/run-7/out.log (2 MB)") == (
        "/var/tmp/run-7/out.log",
    )
    assert _paths_of("Saved in the file `~/reports/q3.csv`") == ("~/reports/q3.csv",)
    assert _paths_of('cut; file_path="/srv/tool result/a b.txt" start_line=40') == (
        "/srv/tool result/a b.txt",
    )


def test_output_without_a_saved_file_has_no_paths() -> None:
    log = "\n".join(f"0000{i} INFO [02] build step {i} saved" for i in range(50))
    assert _paths_of(log) == ()


# --- the one pass is the patterns' own answer ---------------------------------------------

_FRAGMENTS = [
    *("error: cannot find -lfoo", "ERROR [31] cache", "WARN link fail", "all good", "ok"),
    *("Traceback (most recent call last):", '  File "a.py", line 3, in f', "    x()"),
    *("ValueError: bad input", "E       assert 1 == 2", "Expected: 3", "Received: 4"),
    *("--- FAIL: TestAdd (0.00s)", "make: *** [all] Error 2", "exit code 1", "构建失败: 错误"),
    *("İstanbul ERR", "KILLED", "saved to /tmp/x.log", "ſaved to /tmp/long-s.log", ""),
    *('file_path="/ws/tool_result/a.txt" start_line=3', "Saved in the file `~/r.csv`"),
    *("  ● suite › test name", "e: file:///a.kt:3:1 boom", "E  x", "x" * 520 + " error"),
    "sqlalchemy.orm.exc.NoResultFound: No row",  # a pattern's match without a keyword
]


def _reference_scan(text: str) -> list[tuple[str, int]]:
    """scan_errors as it was: every keyword searched in the whole text's lower case."""
    lines = text.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    lower = text.lower()
    if len(lower) != len(text):
        rows = set(range(len(lines)))
    else:
        rows = set()
        for word in errors._KEYWORDS:
            at = lower.find(word)
            while at != -1:
                rows.add(bisect.bisect_right(starts, at) - 1)
                at = lower.find(word, at + 1)
        lead = re.compile(r"^(?:E {2,}|e: |Traceback)", re.MULTILINE)
        rows.update(bisect.bisect_right(starts, m.start()) - 1 for m in lead.finditer(text))
    heads = [r for r in rows if lines[r].startswith("Traceback (most recent call last)")]
    exceptions = errors._exception_rows(lines, heads)
    found: list[tuple[str, int]] = []
    in_failure = False
    for row in sorted(rows | exceptions):
        line = lines[row]
        if len(line) > errors.MAX_LINE_CHARS:
            continue
        rank = errors.DECISIVE if row in exceptions else errors.rank_line(line)
        if rank is None and in_failure and errors._ASSERTED_RE.match(line):
            rank = errors.OTHER
        if rank is not None:
            in_failure = in_failure or rank == errors.DECISIVE
            found.append((line.strip(), rank))
    return found


def _reference_paths(output: str) -> list[str]:
    """The offloaded paths as found before: the pattern run over the whole output."""
    if "file_path=" not in output and "saved " not in output.lower():
        return []
    found = []
    for match in result_facts._OFFLOAD_RE.finditer(output):
        quoted, bare, saved = match.groups()
        if quoted:
            try:
                found.append(str(json.loads(quoted)))
            except ValueError:
                found.append(quoted.strip('"'))
        elif bare:
            bare = bare.rstrip(".,;:)")
            if result_facts.PATH_LIKE_RE.search(
                bare
            ) and not result_facts._PLACEHOLDER_RE.fullmatch(bare):
                found.append(bare)
        else:
            found.append(saved)
    return verbatim.unique(found)


_texts = st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=12), max_size=30).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(_texts, _texts)
def test_error_lines_and_paths_are_those_of_the_whole_text_scan(text: str, seen: str) -> None:
    errors.scan_errors(seen)  # lines remembered from another output change nothing
    assert [(e.text, e.rank) for e in errors.scan_errors(text)] == _reference_scan(text)
    assert result_facts._offload_paths(text) == _reference_paths(text)


def test_a_long_line_is_checked_but_never_kept() -> None:
    long_line = "x" * 60_000 + " error: the end of a minified bundle"
    kinds, lines = errors._short_line_kind.cache_info(), errors._short_line_error.cache_info()
    assert errors.scan_errors(f"{long_line}\nerror: kept {len(long_line)}") == [
        errors.ErrorLine(f"error: kept {len(long_line)}", errors.DECISIVE)
    ]
    assert errors._short_line_kind.cache_info().currsize <= kinds.currsize + 1  # the short one
    assert errors._short_line_error.cache_info().currsize <= lines.currsize + 1
