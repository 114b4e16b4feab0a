"""What each section of a summary may hold (issue 21 item 1): constraints from what the user
wrote, decisions with their reasons, done only where shown, next steps from the last stated
plan; acknowledgements are neither requests nor decisions; every line that goes is counted
by reason. English and Chinese alike."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copaw_context.core.summary import (
    Summary,
    SummaryCompactor,
    enforce_rules,
    extract_facts,
    extractive_summary,
    find_junk,
)
from copaw_context.core.summary.clean import core
from copaw_context.core.summary.rules import item_words
from copaw_context.core.summary.statements import is_acknowledgement, is_plan, unchecked_items
from copaw_context.core.summary.words import text_words
from copaw_context.core.tokens import make_token_counter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ScriptedTextModel


def _user(text: str) -> TranscriptMessage:
    return TranscriptMessage("user", "user", (TranscriptPart("text", text),))


def _bot(text: str) -> TranscriptMessage:
    return TranscriptMessage("assistant", "bot", (TranscriptPart("text", text),))


def _tool(name: str, args: str, output: str, call: str = "c1") -> list[TranscriptMessage]:
    return [
        TranscriptMessage("assistant", "bot", (TranscriptPart("tool_call", args, name, call),)),
        TranscriptMessage("user", "user", (TranscriptPart("tool_result", output, name, call),)),
    ]


def _reply(
    *, constraints: str = "- (none)", done: str = "- (none)", decisions: str = "- (none)"
) -> str:
    return (
        f"## Goal\n- Export the report\n\n## Constraints & Preferences\n{constraints}\n\n"
        f"## Progress\n### Done\n{done}\n### In Progress\n- (none)\n### Blocked\n- (none)\n\n"
        f"## Key Decisions\n{decisions}\n\n## Next Steps\n1. Ship it\n\n"
        "## Critical Context\n- (none)\n"
    )


def _section(text: str, key: str) -> list[str]:
    items: list[str] = Summary.parse(text).items(key)  # type: ignore[arg-type]
    return items


def _compactor(**options: Any) -> SummaryCompactor:
    return SummaryCompactor(mode="llm", counter=make_token_counter("estimate"), **options)


# --------------------------------------------------------------------------- the rules


def test_a_constraint_the_user_never_stated_moves_to_critical_context() -> None:
    messages = [_user("Export the report as CSV. Use tabs for indentation in the script.")]
    reply = _reply(constraints="- Indent the script with tabs\n- Prefer a dark colour theme")
    doc, counts = enforce_rules(Summary.parse(reply), messages, extract_facts(messages))
    assert doc.constraints == ["- Indent the script with tabs"]
    assert "- Prefer a dark colour theme" in doc.critical  # no constraint, but not lost
    assert counts == {"moved": 1}


def test_a_constraint_of_the_previous_summary_is_stated() -> None:
    previous = Summary.parse(_reply(constraints="- Never touch prod.yaml"))
    messages = [_user("Go on.")]
    reply = Summary.parse(_reply(constraints="- Never touch prod.yaml"))
    doc, counts = enforce_rules(reply, messages, extract_facts(messages), previous=previous)
    assert doc is reply and not counts


def test_critical_context_of_the_previous_summary_is_no_constraint_support() -> None:
    # a constraint moved to Critical Context once does not come back as a constraint
    previous = Summary.parse(_reply()).model_copy(update={"critical": ["- Prefer dark themes"]})
    messages = [_user("Go on.")]
    reply = Summary.parse(_reply(constraints="- Prefer dark themes"))
    doc, counts = enforce_rules(reply, messages, extract_facts(messages), previous=previous)
    assert doc.constraints == [] and "- Prefer dark themes" in doc.critical
    assert counts == {"moved": 1}


async def test_a_constraint_survives_a_chain_of_compactions() -> None:
    # stated once, in the first span only: every later span lacks it, the summaries carry it
    compactor = _compactor()
    first = [_user("Export the report. Never touch prod.yaml.")]
    reply = _reply(constraints="- Never touch prod.yaml")
    result = await compactor.summarise(first, previous=None, model=ScriptedTextModel([reply]))
    previous = Summary.parse(result.text)
    for n in range(5):
        span = [_user(f"Go on with part {n}."), _bot(f"Part {n} is exported.")]
        model = ScriptedTextModel([reply])
        result = await compactor.summarise(span, previous=previous, model=model)
        previous = Summary.parse(result.text)
        assert previous.constraints == ["- Never touch prod.yaml"], result.text
        assert "moved" not in result.dropped_by_reason


def test_a_decision_needs_its_reason_and_must_have_been_taken() -> None:
    messages = [
        _user("Export the report."),
        _bot("I will use papaparse because it handles quoted newlines. I will write it in Go."),
    ]
    reply = _reply(
        decisions="- decision - reason: Use papaparse - it handles quoted newlines\n"
        "- Write it in Go\n- Adopt Kubernetes because it scales"
    )
    doc, counts = enforce_rules(Summary.parse(reply), messages, extract_facts(messages))
    assert doc.decisions == ["- Use papaparse - it handles quoted newlines"]  # prefix out
    assert "- Write it in Go" in doc.critical  # no reason: context, not a decision
    assert counts == {"template_prefix": 1, "no_reason": 1, "unstated": 1}


def test_the_extractive_summary_lists_a_decision_only_with_its_reason() -> None:
    messages = [
        _user("Export the report."),
        _bot("I will start with the code. I decided to use sqlite because it is embedded."),
        _bot("我决定先看代码。我们改用 papaparse，因为它能处理引号里的换行。"),
    ]
    summary = extractive_summary(messages)
    decisions = "\n".join(_section(summary, "decisions"))
    critical = "\n".join(_section(summary, "critical"))
    assert "sqlite because it is embedded" in decisions
    assert "因为它能处理引号里的换行" in decisions
    assert "start with the code" not in decisions and "先看代码" not in decisions
    assert "start with the code" in critical and "先看代码" in critical  # context, never lost
    assert find_junk(summary) == []


def test_a_step_only_planned_is_not_done_and_a_shown_one_is() -> None:
    messages = [
        _user("Export the report."),
        *_tool("shell", '{"command": "pytest"}', "12 passed in 0.3s: the exporter tests pass"),
        _bot("Next I will add a benchmark for the exporter."),
    ]
    reply = _reply(done="- [x] Added a benchmark for the exporter\n- [x] The exporter tests pass")
    doc, counts = enforce_rules(Summary.parse(reply), messages, extract_facts(messages))
    assert doc.done == ["- [x] The exporter tests pass"]
    assert counts == {"not_done": 1}


def test_chinese_gets_the_same_rules() -> None:
    messages = [
        _user("请修复导出脚本。不要修改数据库结构。"),
        _bot("决定改用 csv.DictWriter，因为空表也能写出表头。接下来我会补一个单元测试。"),
    ]
    reply = (
        "## 目标\n- 修复导出脚本\n\n## 约束与偏好\n- 不要修改数据库结构\n- 偏好使用深色主题\n\n"
        "## 进展\n### 已完成\n- [x] 补了一个单元测试\n### 进行中\n- （无）\n### 受阻\n- （无）\n\n"
        "## 关键决策\n- 决定 - 原因：改用 csv.DictWriter，因为空表也能写出表头\n"
        "- 好的，我记住了\n\n"
        "## 下一步\n1. 补一个单元测试\n\n## 关键上下文\n- （无）\n"
    )
    doc, counts = enforce_rules(Summary.parse(reply, "zh"), messages, extract_facts(messages))
    assert doc.constraints == ["- 不要修改数据库结构"]
    assert "- 偏好使用深色主题" in doc.critical and counts["moved"] == 1
    assert doc.done == []
    assert doc.decisions[0] == "- 改用 csv.DictWriter，因为空表也能写出表头"
    assert counts["unstated"] >= 1 and counts["not_done"] == 1
    assert counts["template_prefix"] == 1


async def test_the_compactor_applies_every_rule_and_counts_each_line_by_reason() -> None:
    messages = [
        _user("Export the report. Never touch prod.yaml."),
        _bot("Understood, I'll keep that in mind. I will use papaparse because it is small."),
        _bot("Still pending:\n- add a benchmark"),
    ]
    reply = _reply(
        constraints="- Never touch prod.yaml\n- Prefer a dark colour theme\n- (none)",
        done="- [x] Added a benchmark",
        decisions="- decision - reason: use papaparse because it is small\n"
        "- Understood, I'll keep that in mind.",
    )
    result = await _compactor().summarise(messages, previous=None, model=ScriptedTextModel([reply]))
    assert result.method == "llm"
    assert find_junk(result.text) == []
    doc = Summary.parse(result.text)
    assert not [c for c in doc.constraints if "dark colour theme" in c]
    assert "- Prefer a dark colour theme" in doc.critical  # moved, not a constraint
    assert "Added a benchmark" not in result.text and "keep that in mind" not in result.text
    assert "use papaparse because it is small" in result.text
    reasons = result.dropped_by_reason
    assert reasons["moved"] == 1 and reasons["not_done"] == 1
    assert reasons["template_prefix"] == 1 and reasons["acknowledgement"] == 1
    assert reasons["placeholder"] >= 1
    assert sum(reasons.values()) == result.dropped_lines


# --------------------------------------------------------------------------- plans, requests


@pytest.mark.parametrize(
    "plan",
    [
        "Pending: add a benchmark for Allow()",
        "Still pending: add a benchmark for Allow()",
        "Next: add a benchmark for Allow()",
        "To do next: add a benchmark for Allow()",
        "Still pending:\n- add a benchmark for Allow()",
        "Pending:\n1. add a benchmark for Allow()\n2. run go vet",
        "未完成：add a benchmark for Allow()",
        "未完成：\n- add a benchmark for Allow()",
    ],
)
def test_the_last_stated_plan_is_the_next_step_however_it_is_worded(plan: str) -> None:
    messages = [_user("Fix the limiter."), _bot("The limiter is fixed."), _bot(plan)]
    summary = extractive_summary(messages)
    steps = "\n".join(_section(summary, "next_steps"))
    assert "add a benchmark for Allow()" in steps, summary
    assert find_junk(summary) == []


def test_plan_headings_list_their_items_and_stop_at_prose() -> None:
    text = (
        "Done so far.\nStill pending:\n- add a benchmark\n- [x] reproduce\n1. run go vet\nOk.\n- x"
    )
    assert unchecked_items(text) == ["add a benchmark", "run go vet"]
    assert unchecked_items("未完成：\n- 补单元测试") == ["补单元测试"]
    assert is_plan("To do next: rerun the axe tests") and not is_plan("Next, the tests pass.")


@pytest.mark.parametrize(
    "text",
    [
        "Understood, I'll keep that in mind.",
        "Got it, will do.",
        "Sure, I will remember that.",
        "好的，我记住了",
        "明白，我会注意的",
        "收到",
    ],
)
def test_an_acknowledgement_is_recognised(text: str) -> None:
    assert is_acknowledgement(text)


@pytest.mark.parametrize(
    "text", ["Understood. Now fix the parser.", "好的，请继续修复 parser", "Sure, use Go"]
)
def test_a_request_after_an_acknowledgement_is_no_acknowledgement(text: str) -> None:
    assert not is_acknowledgement(text)


def test_an_acknowledgement_is_neither_the_open_request_nor_a_decision() -> None:
    messages = [
        _user("Fix the parser crash in src/parser.c."),
        _bot("Fixed: the tokenizer now checks for EOF."),
        _user("Understood, I'll keep that in mind."),
        _bot("Understood, I'll keep that in mind. Next I will add a regression test."),
    ]
    summary = extractive_summary(messages)
    assert "keep that in mind" not in summary
    steps = "\n".join(_section(summary, "next_steps"))
    assert "regression test" in steps and "Fix the parser crash" in steps
    assert find_junk(summary) == []


def test_chinese_acknowledgement_is_no_request() -> None:
    messages = [
        _user("请修复导出脚本。"),
        _bot("已修好。接下来我会补一个单元测试。"),
        _user("好的，我记住了"),
    ]
    summary = extractive_summary(messages, language="zh")
    assert "我记住了" not in summary
    assert find_junk(summary, "zh") == []


_TEXT = st.text(
    alphabet=st.sampled_from(list("abcXYZ019 _-`*.,:/\n\tßé修复测试ＡＢ１")) | st.characters(),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, max_size=5))
def test_the_conversation_read_as_one_holds_every_word_of_each_message(texts: list[str]) -> None:
    # the one-pass tokeniser of the evidence (megabytes of tool output per compaction) against
    # the per-line one of the items: the same words, but the line-start rules' (a bullet, a
    # lead-in such as "Note:"), which only drop words
    each = set().union(*(item_words(text) for text in texts))
    whole = text_words(texts)
    assert each <= whole
    plain = ["z" + text for text in texts]  # no line-start rule applies
    assert text_words(plain) == set().union(*(item_words(text) for text in plain))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Sorting must be stable", "sorting must be stable"),
        ("Android builds use Gradle 8", "android builds use gradle 8"),
        ("Notebook cells stay in order", "notebook cells stay in order"),
        ("Justify each decision", "justify each decision"),
        ("Note: keep the API stable", "keep the API stable".casefold()),
        ("Also, use pnpm", "use pnpm"),
        ("注意：不要删除迁移", "不要删除迁移"),
    ],
)
def test_a_lead_in_is_a_whole_word_never_the_start_of_one(line: str, expected: str) -> None:
    # found by the property test above: "SO000" lost its "so" as if it were "So, ..."
    assert core(line) == expected
    assert item_words(line) == text_words([expected])
