"""The recall benchmark (``benchmarks/recall.py``) on a small archive: its generator plants each
fact in exactly one message and words the question otherwise, ``memory_search`` finds the
answering message, and each hit names its session and the read_file call of its line; the
committed figures are those docs/quality.md shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.recall import parse_hits, run_recall, write_archive
from benchmarks.recall_corpus import copied_run, make_corpus
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.memory.service import MemoryService
from tests.docs.readme_blocks import ROOT


def test_each_fact_is_in_one_message_and_its_question_is_not_copied() -> None:
    sessions, facts = make_corpus(5, messages=3000, questions=24, sessions=12)
    assert sum(len(s.messages) for s in sessions) >= 3000
    assert {s.lang for s in sessions} == {"en", "zh"}
    planted = [m for s in sessions for m in s.messages if m.fact is not None]
    assert sorted(m.fact for m in planted if m.fact is not None) == list(range(24))
    assert {(f.kind, f.lang) for f in facts} >= {("error", "zh"), ("code", "en"), ("path", "zh")}
    assert all(copied_run(f.question, f.answer_text) is None for f in facts)
    kinds = {b["type"] for s in sessions for m in s.messages for b in m.blocks}
    assert kinds == {"text", "tool_call", "tool_result"}


async def test_memory_search_finds_each_answer_and_names_its_source(tmp_path: Path) -> None:
    sessions, facts = make_corpus(5, messages=3000, questions=24, sessions=12)
    answers = await write_archive(tmp_path, sessions)
    assert len(answers) == 24
    tools = MemoryService(parse_running_config({"running": {}}), tmp_path).tools
    for fact in facts:
        answer = answers[fact.number]
        hits = parse_hits(await tools.memory_search(fact.question))
        found = [h for h in hits if (h["path"], h["line"]) == (answer.path, answer.line)]
        assert found, fact.question
        assert found[0]["session"] == answer.session_id
        assert found[0]["read"] == (answer.path, answer.line)
        archived = (tmp_path / answer.path).read_text(encoding="utf-8").split("\n")
        line = json.loads(archived[answer.line - 1])
        assert line["session_id"] == answer.session_id
        assert fact.answer_text.split("\n")[-1] in json.dumps(line, ensure_ascii=False)


async def test_the_scoring_counts_what_it_found(tmp_path: Path) -> None:
    run = await run_recall(tmp_path, 5, messages=3000, questions=24, sessions=12)
    assert run.messages >= 3000 and run.questions == 24 and run.copied == 0
    assert run.recall_at_1 <= run.recall_at_5 == 1.0
    assert run.sourced == 1.0
    assert sum(n for n, _, _ in run.by_kind.values()) == 24
    assert run.index_mb > 0 and run.archive_files >= 1


def test_docs_quality_shows_the_committed_recall_figures() -> None:
    committed = (ROOT / "benchmarks" / "results" / "recall.md").read_text(encoding="utf-8")
    quality = (ROOT / "docs" / "quality.md").read_text(encoding="utf-8")
    recall = quality[quality.index("## Recall") :]

    def rows(text: str) -> list[str]:
        return [line for line in text.splitlines() if re.match(r"\| (\d|[a-z]+ (en|zh)) ", line)]

    assert rows(recall) and rows(recall) == rows(committed)
    assert "python -m benchmarks --only recall" in recall
