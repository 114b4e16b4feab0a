"""Summary quality: decisions keep their reason, next steps in offline mode, no junk lines,
constraints by meaning, paths as they appeared, a budget that follows the input."""

from __future__ import annotations

from typing import Any

import pytest

from copaw_context.core.summary import (
    Summary,
    SummaryCompactor,
    carry_facts,
    carry_verbatim,
    extract_facts,
    extractive_summary,
)
from copaw_context.core.summary.budget import (
    MIN_BUDGET_CHARS,
    SKELETON_CHARS,
    carried_chars,
    summary_budget,
)
from copaw_context.core.summary.clean import (
    clean_summary,
    is_template_line,
    says_nothing,
    settle_carried,
)
from copaw_context.core.summary.prompts import PLACEHOLDERS, build_compactor_request
from copaw_context.core.summary.statements import is_acknowledgement, is_constraint
from copaw_context.core.tokens import make_token_counter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ScriptedTextModel
from tests.helpers import section_lines

SKELETON = """## Goal
- Export the report

## Constraints & Preferences
{constraints}

## Progress
### Done
{done}
### In Progress
- (none)
### Blocked
- (none)

## Key Decisions
{decisions}

## Next Steps
{next}

## Critical Context
{critical}
"""


def _summary(**parts: str) -> str:
    base = {"constraints": "- (none)", "done": "- (none)", "decisions": "- (none)"}
    base |= {"next": "1. Ship it", "critical": "- (none)"}
    return SKELETON.format(**(base | parts))


def _user(text: str) -> TranscriptMessage:
    return TranscriptMessage("user", "user", (TranscriptPart("text", text),))


def _bot(text: str) -> TranscriptMessage:
    return TranscriptMessage("assistant", "bot", (TranscriptPart("text", text),))


def _compactor(**options: Any) -> SummaryCompactor:
    settings: dict[str, Any] = {"mode": "llm", "counter": make_token_counter("estimate")}
    return SummaryCompactor(**{**settings, "retry_delay": 0.001, **options})


# --------------------------------------------------------------------------- decisions


@pytest.mark.parametrize(
    ("text", "decision"),
    [
        (
            "Decision: use SQLite. Reason: there is no server to run. Now the tests.",
            "Decision: use SQLite. Reason: there is no server to run.",
        ),
        (
            "I'll switch to httpx. This is because requests has no HTTP/2 support.",
            "I'll switch to httpx. This is because requests has no HTTP/2 support.",
        ),
        (
            "决定改用 SQLite。原因：不需要单独的服务器。",
            "决定改用 SQLite。原因：不需要单独的服务器。",
        ),
        ("我们采用 pnpm，因为它的安装更快。", "我们采用 pnpm，因为它的安装更快。"),
    ],
)
def test_a_decision_keeps_its_reason(text: str, decision: str) -> None:
    facts = extract_facts([_user("go"), _bot(text)])
    assert decision in facts.decisions
    summary = extractive_summary([_user("go"), _bot(text)])
    assert decision in "\n".join(section_lines(summary, 3))


def test_a_users_own_decision_is_recorded_with_its_reason() -> None:
    facts = extract_facts([_user("Decision: keep Python 3.11. Reason: the server runs it.")])
    assert facts.decisions == ("Decision: keep Python 3.11. Reason: the server runs it.",)


def test_the_carry_over_adds_reasoned_decisions_only_and_replaces_the_reasonless_wording() -> None:
    messages = [
        _user("go"),
        _bot("I decided to use PostgreSQL because we need JSONB columns. I will read main.py."),
    ]
    facts = extract_facts(messages)
    model = _summary(decisions="- Use PostgreSQL")
    carried = Summary.parse(carry_verbatim(model, facts))
    assert "I decided to use PostgreSQL because we need JSONB columns." in "\n".join(
        carried.decisions
    )
    assert "I will read main.py." not in carry_verbatim(model, facts)  # no reason: not carried
    settled, dropped = settle_carried(carried, facts)
    assert settled.decisions == ["- I decided to use PostgreSQL because we need JSONB columns."]
    assert dropped == 1


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_prompt_asks_for_decision_and_reason(language: str) -> None:
    request = build_compactor_request("user: hi", language=language)  # type: ignore[arg-type]
    assert ("decision - reason" if language == "en" else "决定 - 原因") in request


# --------------------------------------------------------------------------- next steps


def test_offline_next_steps_come_from_the_stated_plan_not_the_last_chat_line() -> None:
    messages = [
        _user("Fix the parser crash in src/parser.c."),
        _bot("Fixed the crash. Next I will add a regression test for empty input."),
        _user("Noted."),
    ]
    summary = extractive_summary(messages)
    steps = "\n".join(section_lines(summary, 4))
    assert "Next I will add a regression test for empty input." in steps
    assert "Noted." not in summary
    assert "Check that this user request was fully answered: Fix the parser crash" in steps
    assert steps.index("regression test") < steps.index("Check that")


def test_open_task_items_and_an_unanswered_request_are_next_steps() -> None:
    plan = "Plan:\n- [x] reproduce\n- [ ] write the migration\n- [ ] update the docs"
    messages = [_user("Add a users table."), _bot(plan), _user("Also rename the column to email.")]
    steps = section_lines(extractive_summary(messages), 4)
    assert steps[0].startswith("1. Continue with the user request") and "rename" in steps[0]
    assert "write the migration" in steps[1] and "update the docs" in steps[2]
    assert "reproduce" not in "\n".join(steps)


def test_chinese_plan_and_a_newer_plan_replaces_the_older_one() -> None:
    first = extractive_summary(
        [_user("修复登录接口。"), _bot("已修复。接下来我会补充迁移脚本。")], language="zh"
    )
    assert "接下来我会补充迁移脚本。" in "\n".join(section_lines(first, 4))
    second = extractive_summary(
        [_user("好的"), _bot("迁移脚本写好了。下一步我将更新文档。")],
        previous_summary=first,
        language="zh",
    )
    steps = "\n".join(section_lines(second, 4))
    assert "下一步我将更新文档。" in steps and "补充迁移脚本" not in steps


@pytest.mark.parametrize("text", ["Noted.", "ok thanks", "好的", "收到！", "Thanks!"])
def test_acknowledgements(text: str) -> None:
    assert is_acknowledgement(text)
    assert not is_acknowledgement("ok, now add tests")


# --------------------------------------------------------------------------- junk lines


@pytest.mark.parametrize("language", ["en", "zh"])
def test_template_slots_are_junk_with_or_without_brackets(language: str) -> None:
    for placeholder in PLACEHOLDERS[language]:  # type: ignore[index]
        assert is_template_line(f"- {placeholder}")
        assert is_template_line(f"- {placeholder.strip('<>')}")
    assert is_template_line("- <anything>") and not is_template_line("- keep <div> tags")


def test_clean_drops_placeholders_stray_none_and_steps_already_done() -> None:
    text = _summary(
        constraints="- 用户提出的要求、限制或禁止事项，保留用户原话\n- Never touch prod.yaml",
        done="- [x] Wrote the exporter",
        next="1. Wrote the exporter\n2. the next concrete action\n3. Add CSV headers",
        critical="- (none)\n- Port 8080",
    )
    doc, dropped = clean_summary(Summary.parse(text))
    rendered = doc.render()
    assert dropped == 4
    assert "保留用户原话" not in rendered and "next concrete action" not in rendered
    assert section_lines(rendered, 4) == ["3. Add CSV headers"]
    assert section_lines(rendered, 5) == ["- Port 8080"]


@pytest.mark.parametrize(
    ("sentence", "constraint"),
    [
        ("我只想要一个能导出 CSV 的小脚本。", False),
        ("只改 src 目录。", True),
        ("I only want a small CSV export script.", False),
        ("Only modify files under src/.", True),
        ("I don't know why it fails.", False),
        ("Don't add dependencies.", True),
        ("I prefer tabs.", True),
        ("别动 vendor 目录。", True),
        ("尽量少用第三方库。", True),
        ("This is just context.", False),
        ("Please keep the public API of src/api.ts stable.", True),
        ("Leave the CI config alone.", True),
        ("接口要保持向后兼容。", True),
    ],
)
def test_constraints_by_meaning(sentence: str, constraint: bool) -> None:
    assert is_constraint(sentence) is constraint


async def test_a_carried_constraint_replaces_the_models_rewording_and_is_counted() -> None:
    reply = _summary(constraints="- Never touch prod.yaml")
    model = ScriptedTextModel([reply])
    messages = [_user("Export the report. Please never touch prod.yaml, it is live.")]
    result = await _compactor().summarise(messages, previous=None, model=model)
    assert result.text.count("never touch prod.yaml, it is live.") == 1
    assert "- Never touch prod.yaml\n" not in result.text
    assert "Constraints (verbatim)" not in result.text
    assert result.dropped_lines == 1


async def test_made_up_paths_are_written_as_the_transcript_showed_them() -> None:
    call = TranscriptPart("tool_call", '{"file_path": "src/app/main.py"}', "read_file", "c1")
    messages = [
        _user("Export the report."),
        TranscriptMessage("assistant", "bot", (call,)),
        TranscriptMessage(
            "user", "user", (TranscriptPart("tool_result", "def main(): ...", "read_file", "c1"),)
        ),
    ]
    reply = _summary(critical="- Entry point: /home/user/project/src/app/main.py\n- /etc/hosts")
    result = await _compactor().summarise(messages, previous=None, model=ScriptedTextModel([reply]))
    assert "/home/user/project" not in result.text
    assert "- Entry point: src/app/main.py" in result.text
    assert "- /etc/hosts" in result.text  # not a relative path of the transcript
    assert result.dropped_lines == 1


async def test_none_left_above_the_carried_block_goes() -> None:
    output = "src/api.ts:14:23 - error TS2345: Argument of type 'string' is not assignable."
    messages = [
        _user("Build it."),
        TranscriptMessage("user", "user", (TranscriptPart("tool_result", output, "sh", "c"),)),
    ]
    result = await _compactor().summarise(
        messages, previous=None, model=ScriptedTextModel([_summary()])
    )
    critical = section_lines(result.text, 5)
    assert "- (none)" not in critical and any(output in line for line in critical)
    assert result.dropped_lines == 1


# --------------------------------------------------------------------------- budget


def test_the_budget_follows_the_input_within_the_cap() -> None:
    small = summary_budget(16000, compacted_chars=2000)
    large = summary_budget(16000, compacted_chars=30000)
    assert small == MIN_BUDGET_CHARS < large <= 16000
    assert summary_budget(16000, compacted_chars=10**7) == 16000
    assert summary_budget(4000, compacted_chars=2000, previous_chars=3000) == 3800
    assert summary_budget(16000, compacted_chars=0, carried=5000) == 5000 + SKELETON_CHARS
    assert summary_budget(3000, compacted_chars=0, carried=5000) == 3000  # the cap wins
    with pytest.raises(ValueError, match="cap"):
        summary_budget(999, compacted_chars=0)


async def test_the_compactor_asks_for_the_budget_and_keeps_the_cap() -> None:
    messages = [_user("Export the report. Never touch prod.yaml."), _bot("ok " * 3000)]
    facts = extract_facts(messages)
    assert carried_chars(facts) == len("Never touch prod.yaml.") + 6
    model = ScriptedTextModel([_summary()])
    result = await _compactor(max_summary_chars=3000).summarise(
        messages, previous=None, model=model
    )
    assert result.budget_chars == 3000 and len(result.text) <= 3000
    short = ScriptedTextModel([_summary()])
    result = await _compactor(max_summary_chars=16000).summarise(
        messages[:1], previous=None, model=short
    )
    assert result.budget_chars == MIN_BUDGET_CHARS
    assert "at most 1000 characters" in short.requests[0]
    offline = await _compactor(mode="extractive").summarise(messages[:1], previous=None, model=None)
    assert offline.budget_chars == MIN_BUDGET_CHARS and len(offline.text) <= 1000


def test_near_duplicates_in_other_words_are_settled() -> None:
    messages = [
        _user("Fix the tests. Always run go vet before committing."),
        _bot("I decided to use papaparse for the CSV export because it handles quoted newlines."),
    ]
    facts = extract_facts(messages)
    model = _summary(
        constraints="- Run go vet before every commit",
        decisions="- Use papaparse: it handles quoted newlines\n- Keep the public API",
    )
    settled, dropped = settle_carried(carry_facts(Summary.parse(model), facts), facts)
    text = settled.render()
    assert section_lines(text, 1) == ["- Always run go vet before committing."]
    assert section_lines(text, 3) == [
        "- Keep the public API",
        "- I decided to use papaparse for the CSV export because it handles quoted newlines.",
    ]
    assert "Constraints (verbatim)" not in text and dropped == 2


@pytest.mark.parametrize(
    ("item", "nothing"),
    [
        ("- No decisions were made based on the conversation.", True),
        ("- No errors so far.", True),
        ("- 暂无决定", True),
        ("- No need to rebuild the cache.", False),
        ("- No tests in this repo use mocks, so write real files.", False),
    ],
)
def test_sentences_that_only_say_a_section_is_empty(item: str, nothing: bool) -> None:
    assert says_nothing(item) is nothing


def test_a_different_constraint_is_never_taken_for_a_rewording() -> None:
    facts = extract_facts([_user("Export it. Never edit files under vendor/.")])
    model = _summary(constraints="- Never edit files under src/")
    settled, dropped = settle_carried(carry_facts(Summary.parse(model), facts), facts)
    assert section_lines(settled.render(), 1) == ["- Never edit files under src/"]
    assert "  - Never edit files under vendor/." in settled.render()
    assert dropped == 1  # only the "(none)" above the carried block
    reworded = _summary(constraints="- The public API of `src/api.ts` must remain stable.")
    facts = extract_facts([_user("Please keep the public API of src/api.ts stable.")])
    settled, dropped = settle_carried(carry_facts(Summary.parse(reworded), facts), facts)
    assert section_lines(settled.render(), 1) == [
        "- Please keep the public API of src/api.ts stable."
    ]
    assert dropped == 1  # the model's wording; the carried block is gone, "(none)" stays


async def test_a_path_from_the_previous_summary_is_not_taken_for_an_invention() -> None:
    call = TranscriptPart("tool_call", '{"file_path": "src/parser.c"}', "read_file", "c1")
    messages = [_user("Go on."), TranscriptMessage("assistant", "bot", (call,))]
    previous = _summary(critical="- Crash at /repo/src/parser.c:412")
    result = await _compactor().summarise(
        messages, previous=Summary.parse(previous), model=ScriptedTextModel([previous])
    )
    assert "- Crash at /repo/src/parser.c:412" in result.text and result.dropped_lines == 0
