"""Fact extraction skips the package's own output: search results, read hints, cut paths,
and raw data as an outcome (issue 17 item 23: junk in the demo's summary)."""

from __future__ import annotations

import re
from pathlib import Path

from copaw_context.cli.demo.run import run_demo
from copaw_context.core.memory.search import SearchHit
from copaw_context.core.memory.tools import format_hits
from copaw_context.core.summary import extract_facts, find_junk, split_summary_message
from copaw_context.core.summary.facts import ExtractedFacts
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart


def _facts(output: str, tool: str = "shell") -> ExtractedFacts:
    call = TranscriptPart("tool_call", '{"query": "x"}', tool, "c1")
    result = TranscriptPart("tool_result", output, tool, "c1")
    return extract_facts(
        [
            TranscriptMessage("assistant", "assistant", (call,)),
            TranscriptMessage("tool", "tool", (result,)),
        ]
    )


def _search_output() -> str:
    hits = [
        SearchHit(
            "memory/2026-12-03.md",
            3,
            "memory",
            "Lesson: `src/parser.c:412:17: error: 'tok' undeclared` stays until fixed",
            stamp="2026-12-03",
        ),
        SearchHit(
            "dialog/2026-12-03.jsonl",
            13,
            "dialog",
            "…run_build: src/parser.c:412:17: error: 'tok' undeclared; read_doc output is "
            "saved in /ws/tool_result/e8472739…",
            label="assistant",
        ),
    ]
    return format_hits("tok undeclared", hits)


def test_search_results_give_an_outcome_and_no_errors_or_paths() -> None:
    for tool in ("memory_search", "recall"):  # by name, or by the results' own header
        facts = _facts(_search_output(), tool)
        assert facts.error_lines == ()
        assert facts.file_paths == ()
        assert facts.tool_outcomes == (f"{tool}: ok — 2 result(s) for 'tok undeclared'",)


def test_a_read_hint_placeholder_and_a_cut_path_are_not_paths() -> None:
    hint = "read more with read_file(file_path=PATH, start_line=LINE)."
    assert _facts(hint).file_paths == ()
    assert _facts("output saved in /ws/tool_result/e8472739… (cut)").file_paths == ()
    assert _facts("output saved in /ws/out/run.log.").file_paths == ("/ws/out/run.log",)
    assert _facts("see file_path=/ws/a.txt, then go on").file_paths == ("/ws/a.txt",)


def test_raw_json_and_markup_are_described_not_copied() -> None:
    records = "\n".join(
        f'{{"ts": "2026-11-0{i}", "level": "INFO", "msg": "m{i}"}}' for i in range(5)
    )
    assert _facts(records).tool_outcomes == ("shell: ok — [JSON, 5 lines]",)
    mid = '9c878e"},{"ts":"2026","level":"INFO","service":"s","msg":"m"}'
    assert _facts(mid).tool_outcomes == ("shell: ok — [JSON, 1 lines]",)
    page = "<!DOCTYPE html>\n<html><head><title>Release  notes v3</title></head>\n<body/>"
    assert _facts(page).tool_outcomes == ("shell: ok — [page: Release notes v3; 3 lines]",)
    assert _facts("<svg>\n<g/>\n</svg>").tool_outcomes == ("shell: ok — [markup, 3 lines]",)
    assert _facts("Build finished in 3 s").tool_outcomes == ("shell: ok — Build finished in 3 s",)


async def test_the_demo_summary_carries_no_junk(tmp_path: Path) -> None:
    result = await run_demo(tmp_path / "ws", out=None)
    summary = result.summary
    assert "## Goal" in summary and "tok' undeclared" in summary, summary[:400]
    junk = {
        "placeholder path": re.findall(r"File: PATH", summary),
        "cut path": re.findall(r"tool_result/[0-9a-f]{1,31}(?![0-9a-f])(?!\.txt)", summary),
        "search hit as error": re.findall(r"(?m)^- (?:Error|Last error seen): \d+\. ", summary),
        "raw JSON": re.findall(r'(?m)^- \[x\] .*"\},\{"', summary),
        "raw markup": re.findall(r"(?m)^- \[x\] .*: ok — <", summary),
    }
    assert not any(junk.values()), {k: v[:3] for k, v in junk.items() if v}
    assert find_junk(split_summary_message(summary)) == []  # the checker of issue 21 agrees
