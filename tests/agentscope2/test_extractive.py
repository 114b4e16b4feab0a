"""Deterministic fact extraction, verbatim carry-over, merging and the extractive summary."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from copaw_context.core.summary import (
    SECTION_TITLES,
    ExtractedFacts,
    Summary,
    carry_verbatim,
    extract_facts,
    extractive_summary,
    is_placeholder,
    merge,
    preserve_previous,
    render_summary_message,
    section_index,
    split_summary_message,
    validate_summary,
)
from copaw_context.core.toolresults.truncation import truncate_text_output
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from tests.helpers import outline, section_lines

ASSERTION = "E   AssertionError: expected 3, got 4"


def _msg(role: str, *parts: TranscriptPart, ts: str = "") -> TranscriptMessage:
    name = {"user": "alice", "assistant": "bot"}.get(role, role)
    return TranscriptMessage(role=role, name=name, parts=tuple(parts), timestamp=ts)  # type: ignore[arg-type]


def _text(text: str) -> TranscriptPart:
    return TranscriptPart("text", text)


def _call(name: str, raw: str, call_id: str) -> TranscriptPart:
    return TranscriptPart("tool_call", raw, name, call_id)


def _result(name: str, output: str, call_id: str, is_error: bool = False) -> TranscriptPart:
    return TranscriptPart("tool_result", output, name, call_id, is_error)


def _pytest_log() -> str:
    passed = [f"tests/test_mod_{i:03d}.py::test_case PASSED" for i in range(300)]
    tail = [
        "=================================== FAILURES ===================================",
        "_________________________________ test_count _________________________________",
        "    def test_count():",
        ">       assert count_items([1, 2, 3]) == 3",
        ASSERTION,
        "tests/test_main.py:12: AssertionError",
        "FAILED tests/test_main.py::test_count - AssertionError: expected 3, got 4",
        "========================= 1 failed, 300 passed in 4.21s =========================",
    ]
    return "\n".join([*passed, *tail])


def realistic_session() -> list[TranscriptMessage]:
    return [
        _msg(
            "user",
            _text(
                "The counter in our app is off by one, please fix it. "
                "Run the tests before you finish. Please never touch prod.yaml, it is live."
            ),
            ts="2025-01-15T10:00:00",
        ),
        _msg(
            "assistant",
            _text("I will read main.py first."),
            _call("read_file", '{"file_path": "/repo/src/app/main.py"}', "c1"),
            ts="2025-01-15T10:00:04",
        ),
        _msg("user", _result("read_file", "def count_items(xs):\n    return len(xs) + 1\n", "c1")),
        _msg(
            "assistant",
            _call("execute_shell_command", '{"command": "cd /repo && pytest -q"}', "c2"),
        ),
        _msg("user", _result("execute_shell_command", _pytest_log() + "\nExit code: 1", "c2")),
        _msg(
            "assistant",
            _text("The bug is the `+ 1`; I decided to keep the signature and note it."),
            _call("write_file", '{"path": "./docs/notes.md", "content": "count fix"}', "c3"),
        ),
        _msg("user", _result("write_file", "Wrote 9 bytes to ./docs/notes.md", "c3")),
        _msg(
            "user", _text("Also add a regression test for an empty list."), ts="2025-01-15T10:05:00"
        ),
    ]


# --------------------------------------------------------------------------- extract_facts


def test_extract_facts_realistic_session_is_verbatim() -> None:
    facts = extract_facts(realistic_session())
    assert facts.user_requests[0].startswith("The counter in our app is off by one")
    assert facts.user_requests[-1] == "Also add a regression test for an empty list."
    assert "Please never touch prod.yaml, it is live." in facts.constraints
    assert ASSERTION in facts.error_lines  # late in a 300-line log
    assert "FAILED tests/test_main.py::test_count - AssertionError: expected 3, got 4" in (
        facts.error_lines
    )
    assert "Exit code: 1" in facts.error_lines
    assert facts.file_paths[:2] == ("/repo/src/app/main.py", "./docs/notes.md")
    assert facts.read_paths == ("/repo/src/app/main.py",)  # a clean read: no outcome line
    assert facts.tool_outcomes == (
        "execute_shell_command(cd /repo && pytest -q): error — FAILED "
        "tests/test_main.py::test_count - AssertionError: expected 3, got 4",
        "write_file(./docs/notes.md): ok — Wrote 9 bytes to ./docs/notes.md",
    )
    assert facts.decisions == (
        "I will read main.py first.",
        "The bug is the `+ 1`; I decided to keep the signature and note it.",
    )


def test_all_facts_survive_into_both_kinds_of_summary() -> None:
    messages = realistic_session()
    facts = extract_facts(messages)
    vague = GOOD_LLM.replace("never touch prod.yaml", "be careful with config")
    carried = carry_verbatim(vague, facts)
    summary = extractive_summary(messages)
    for text in (carried, summary):
        for item in (*facts.constraints, *facts.error_lines, *facts.file_paths):
            assert item in text
        assert "never touch prod.yaml" in text
        assert ASSERTION in text
        assert validate_summary(text) is None


def test_constraints_in_both_languages() -> None:
    text = (
        "先看一下日志。不要修改 prod.yaml！必须使用 Python 3.11；只改 src 目录。\n"
        "- Always run ruff.\nI prefer short answers. This is just context."
    )
    facts = extract_facts([_msg("user", _text(text))])
    assert facts.constraints == (
        "不要修改 prod.yaml！",
        "必须使用 Python 3.11；",
        "只改 src 目录。",
        "Always run ruff.",
        "I prefer short answers.",
    )


def test_assistant_text_is_not_a_user_constraint_and_summary_messages_are_skipped() -> None:
    injected = render_summary_message(
        GOOD_LLM + "- E   AssertionError: old\n", [("dialog/2025-01-15.jsonl", 3)]
    )
    messages = [
        _msg("user", _text(injected)),
        _msg("assistant", _text("You must never do X.")),
        _msg("user", _text("ok go")),
    ]
    facts = extract_facts(messages)
    assert facts.user_requests == ("ok go",)
    assert facts.constraints == ()
    assert facts.error_lines == ()  # the summary's own lines are not mined again


def test_long_user_request_is_cut_with_a_note() -> None:
    facts = extract_facts([_msg("user", _text("x" * 5000))])
    (request,) = facts.user_requests
    assert request.startswith("x" * 2000) and request.endswith("[3000 more characters omitted]")


def test_error_lines_are_deduplicated_capped_and_keep_the_latest() -> None:
    log = "\n".join(f"ERROR step {i}" for i in range(60)) + "\nERROR step 59\nerror: final"
    facts = extract_facts([_msg("user", _result("shell", log, "c"))])
    assert len(facts.error_lines) == 40
    assert facts.error_lines[-1] == "error: final"
    assert facts.error_lines[0] == "ERROR step 21"
    clean = extract_facts([_msg("user", _result("shell", "0 errors, exit code 0\nall good", "c"))])
    assert clean.error_lines == ()
    assert clean.tool_outcomes == ("shell: ok — 0 errors, exit code 0",)


def test_source_code_is_not_mistaken_for_errors() -> None:
    code = (
        "class CompactionError(CopawContextError):\n"
        "    try:\n        x = table[key]\n    except KeyError:\n"
        '        raise ValueError(f"bad key {key}")\n'
    )
    facts = extract_facts([_msg("user", _result("read_file", code, "c"))])
    assert facts.error_lines == ()
    assert facts.tool_outcomes == ("read_file: ok — class CompactionError(CopawContextError):",)


@pytest.mark.parametrize(
    "line",
    [
        "error[E0308]: mismatched types",
        "TypeError: x is not a function",
        'Exception in thread "main" java.lang.NullPointerException',
        "requests.exceptions.ConnectionError",
        "fatal: not a git repository (or any of the parent directories): .git",
        "panic: runtime error: index out of range [3] with length 3",
        "npm ERR! code ELIFECYCLE",
        "Process exited with code 2",
        "编译失败：找不到符号",
    ],
)
def test_error_lines_across_toolchains(line: str) -> None:
    output = f"building...\n{line}\ndone"
    assert extract_facts([_msg("user", _result("shell", output, "c"))]).error_lines == (line,)


def test_constraints_ignore_code_blocks() -> None:
    text = "Fix this:\n```python\n# you must never call this\nonly_once()\n```\nDon't add deps."
    assert extract_facts([_msg("user", _text(text))]).constraints == ("Don't add deps.",)


def test_failed_tool_without_error_words_still_counts() -> None:
    facts = extract_facts([_msg("user", _result("fetch", "\n  timed out after 30 s\n", "c", True))])
    assert facts.error_lines == ("timed out after 30 s",)
    assert facts.tool_outcomes == ("fetch: error — timed out after 30 s",)


def test_offload_paths_from_truncation_notices() -> None:
    big = "\n".join(f"row {i}" for i in range(5000))
    ours = truncate_text_output(
        big, total_lines=5000, max_bytes=200, file_path="/w/tool_results/7f3a.txt"
    )
    reference = (
        "head\n<<<TRUNCATED>>>\nThe output above was truncated.\n"
        "If the current content is not enough, call `read_file` with "
        "file_path=/w/tool_result/abc.txt start_line=31 to read more."
    )
    no_path = "x\n<<<TRUNCATED>>>\ncall `read_file` with file_path= start_line=3 to read more."
    messages = [
        _msg("user", _result("browser_use", ours, "a")),
        _msg("user", _result("shell", reference, "b")),
        _msg("user", _result("shell", no_path, "c")),
    ]
    assert extract_facts(messages).file_paths == (
        "/w/tool_results/7f3a.txt",
        "/w/tool_result/abc.txt",
    )


def test_paths_from_tool_inputs() -> None:
    raw = (
        '{"paths": ["src/a.py", "src/b.py"], "options": {"output_path": "out/r.json"}, '
        '"command": "cat /etc/hosts.txt ../up/x.cfg https://example.com/page.html", "path": ".", '
        '"source": "print(1)"}'
    )
    facts = extract_facts([_msg("assistant", _call("multi", raw, "c"))])
    assert facts.file_paths == (
        "src/a.py",
        "src/b.py",
        "out/r.json",
        "/etc/hosts.txt",
        "../up/x.cfg",
    )
    broken = extract_facts([_msg("assistant", _call("edit", "not json ./notes/todo.md", "c"))])
    assert broken.file_paths == ("./notes/todo.md",)


# --------------------------------------------------------------------------- carry_verbatim

GOOD_LLM = """## Goal
Fix the off-by-one counter in /repo/src/app/main.py.

## Constraints & Preferences
- never touch prod.yaml

## Progress
### Done
- [x] Found the bug
### In Progress
- [ ] Add a regression test
### Blocked
- (none)

## Key Decisions
- Keep the signature of `count_items()`

## Next Steps
1. Add the empty-list test

## Critical Context
- Tests run with `cd /repo && pytest -q`

## Extra Notes
- keep me
"""


def test_carry_inserts_into_critical_context_before_the_next_section() -> None:
    facts = ExtractedFacts(
        constraints=("never touch prod.yaml", "Use tabs."),
        error_lines=(ASSERTION,),
        file_paths=("/repo/src/app/main.py", "./docs/notes.md"),
    )
    out = carry_verbatim(GOOD_LLM, facts)
    _, sections = outline(out)
    critical = "\n".join(next(body for title, body in sections if section_index(title) == 5))
    assert critical.strip() == (
        "- Tests run with `cd /repo && pytest -q`\n"
        "- Constraints (verbatim):\n  - Use tabs.\n"
        "- Errors (verbatim):\n  - " + ASSERTION + "\n"
        "- Files:\n  - ./docs/notes.md"
    )
    assert out.endswith("## Extra Notes\n- keep me\n")
    assert carry_verbatim(out, facts) == out


def test_carry_creates_the_section_in_chinese_and_leaves_complete_text_alone() -> None:
    facts = ExtractedFacts(constraints=("不要修改 prod.yaml",), file_paths=("/a/b.py",))
    out = carry_verbatim("## 目标\n修复计数", facts, language="zh")
    assert out == (
        "## 目标\n修复计数\n\n## 关键上下文\n"
        "- 约束（原文）：\n  - 不要修改 prod.yaml\n- 文件：\n  - /a/b.py\n"
    )
    assert carry_verbatim(out, facts, language="zh") == out
    assert carry_verbatim("", ExtractedFacts()) == ""


_tricky = st.lists(
    st.sampled_from(
        [*"ab #-*`<>[]()\\/.:：。中文\t\n\r$%{}", "## Goal", "```", "\u200b", "é", "- [x] "]
    ),
    max_size=12,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(
    summary=st.one_of(st.just(GOOD_LLM), st.just(""), _tricky),
    constraints=st.lists(_tricky, max_size=5),
    errors=st.lists(_tricky, max_size=5),
    paths=st.lists(_tricky, max_size=5),
    language=st.sampled_from(["en", "zh"]),
)
def test_carry_verbatim_is_complete_idempotent_and_loses_nothing(
    summary: str, constraints: list[str], errors: list[str], paths: list[str], language: str
) -> None:
    facts = ExtractedFacts(
        constraints=tuple(constraints), error_lines=tuple(errors), file_paths=tuple(paths)
    )
    once = carry_verbatim(summary, facts, language=language)  # type: ignore[arg-type]
    for item in (*constraints, *errors, *paths):
        assert item in once
    assert carry_verbatim(once, facts, language=language) == once  # type: ignore[arg-type]
    if all(item in summary for item in (*constraints, *errors, *paths)):
        assert once == summary
    for line in summary.split("\n"):
        if not line.strip().startswith("```"):  # only a fence wrapping everything is removed
            assert line.strip() in once


def test_carry_never_adds_an_item_twice() -> None:
    facts = ExtractedFacts(
        constraints=("keep /x/y.py intact", "keep /x/y.py intact"),
        file_paths=("/x/y.py",),
    )
    out = carry_verbatim("## Goal\ng", facts)
    assert out.count("/x/y.py") == 1


# --------------------------------------------------------------------------- merge_sections


_section_items = section_lines


def merge_sections(previous: str, new: str, *, language: str = "en") -> str:
    """The merge of two summary texts, rendered."""
    old, fresh = (
        Summary.parse(split_summary_message(text), language)  # type: ignore[arg-type]
        for text in (previous, new)
    )
    return merge(old, fresh).render()


def test_merge_unions_in_order_and_keeps_unknown_sections() -> None:
    new = """## Goal
Fix the off-by-one counter in /repo/src/app/main.py.

## Constraints & Preferences
- Use tabs.

## Progress
### Done
- [x] Add a regression test
### In Progress
- [ ] Update the changelog
### Blocked
- (none)

## Key Decisions
- (none)

## Next Steps
1. Update the changelog
2. Add the empty-list test

## Critical Context
- none

## Open Questions
- Which Python versions?
"""
    merged = merge_sections(GOOD_LLM, new)
    assert validate_summary(merged) is None
    assert merged.count("Fix the off-by-one counter") == 1
    assert _section_items(merged, 1) == ["- never touch prod.yaml", "- Use tabs."]
    progress = _section_items(merged, 2)
    assert progress == [
        "### Done",
        "- [x] Found the bug",
        "- [x] Add a regression test",
        "### In Progress",
        "- [ ] Update the changelog",  # the finished item moved to Done
        "### Blocked",
        "- (none)",
    ]
    assert _section_items(merged, 4) == ["1. Add the empty-list test", "2. Update the changelog"]
    assert _section_items(merged, 5) == ["- Tests run with `cd /repo && pytest -q`"]
    assert merged.index("## Extra Notes") < merged.index("## Open Questions")
    assert merged.rstrip().endswith("## Open Questions\n- Which Python versions?")


def test_merge_reads_either_language_and_renders_the_requested_one() -> None:
    zh = "## 目标\n修复计数\n\n## 约束\n- 不要修改 prod.yaml\n\n## 进展\n"
    zh += "### 已完成\n- [x] 读取文件\n"
    merged = merge_sections(zh, GOOD_LLM, language="zh")
    titles = [title for title, _ in outline(merged)[1]]
    assert titles == [*SECTION_TITLES["zh"], "Extra Notes"]
    assert _section_items(merged, 0) == [
        "修复计数",
        "Fix the off-by-one counter in /repo/src/app/main.py.",
    ]
    assert "- [x] 读取文件" in merged and "- [x] Found the bug" in merged
    assert validate_summary(merged, language="zh") is None


def test_merge_keeps_multiline_items_and_code_blocks_whole() -> None:
    previous = (
        "## Goal\nBuild it.\n\n## Critical Context\n- Command:\n  ```bash\n  make all\n\n"
        "  make test\n  ```\n- Second\n"
    )
    merged = merge_sections(previous, previous)
    assert merged.count("make all") == 1 and merged.count("- Second") == 1
    assert "- Command:\n  ```bash\n  make all\n\n  make test\n  ```\n- Second" in merged


# --------------------------------------------------------------------------- extractive_summary


@pytest.mark.parametrize("language", ["en", "zh"])
def test_extractive_summary_is_valid_and_complete(language: str) -> None:
    messages = realistic_session()
    summary = extractive_summary(messages, language=language)  # type: ignore[arg-type]
    assert validate_summary(summary, language=language) is None  # type: ignore[arg-type]
    titles = [title for title, _ in outline(summary)[1]]
    assert titles == list(SECTION_TITLES[language])  # type: ignore[index]
    goal = "\n".join(_section_items(summary, 0))
    assert "The counter in our app is off by one, please fix it." in goal  # first request
    assert "Also add a regression test for an empty list." in goal  # latest request
    read = {"en": "- File read: ", "zh": "- 读取的文件："}[language] + "/repo/src/app/main.py"
    assert read in summary.splitlines()  # a clean read is no progress: listed once, as read
    assert "read_file(/repo/src/app/main.py)" not in summary
    blocked = "- execute_shell_command(cd /repo && pytest -q): error — FAILED tests/test_main.py"
    assert f"{blocked}::test_count" in summary
    assert "I decided to keep the signature" in summary
    next_steps = _section_items(summary, 4)
    assert next_steps[0].startswith("1. ") and "regression test for an empty list" in next_steps[0]


def test_extractive_summary_marks_an_answered_request() -> None:
    messages = [
        _msg("user", _text("What is 2+2?")),
        _msg("assistant", _text("4.")),
    ]
    summary = extractive_summary(messages)
    assert "### In Progress\n- (none)" in summary
    assert "1. Check that this user request was fully answered: What is 2+2?" in summary


def test_extractive_summary_records_the_compact_note() -> None:
    summary = extractive_summary(realistic_session(), extra_instruction="keep  only\nthe decisions")
    assert "- Compaction note from the user: keep only the decisions" in summary


def _item_lines(text: str) -> list[str]:
    return [
        line
        for line in text.split("\n")
        if line.strip() and not line.startswith("#") and not _is_none_line(line)
    ]


def _is_none_line(line: str) -> bool:
    return line.strip() in ("- (none)", "- （无）")


def test_merging_keeps_every_previous_item() -> None:
    summary = extractive_summary(realistic_session(), previous_summary=GOOD_LLM)
    assert validate_summary(summary) is None
    for line in _item_lines(GOOD_LLM):
        assert line.lstrip("0123456789. ") in summary
    rendered = render_summary_message(GOOD_LLM, [("dialog/2025-01-15.jsonl", 8)])
    from_message = extractive_summary(realistic_session(), previous_summary=rendered)
    assert from_message == summary  # the guide is stripped, never nested


def test_repeated_merging_neither_nests_nor_duplicates() -> None:
    messages = realistic_session()
    summary = extractive_summary(messages, previous_summary=GOOD_LLM)
    first = summary
    for _ in range(10):
        rendered = render_summary_message(summary, [("dialog/2025-01-15.jsonl", 40)])
        summary = extractive_summary(messages, previous_summary=rendered)
    assert summary == first
    assert summary.count("## Goal") == 1
    assert len(re.findall(r"^## ", summary, flags=re.MULTILINE)) == 7
    for line in _item_lines(GOOD_LLM):
        assert summary.count(line.lstrip("0123456789. ")) == 1


def test_successive_compactions_accumulate_without_loss() -> None:
    summary = ""
    for step in range(10):
        messages = [
            _msg("user", _text(f"Step {step}: never delete table t{step}.")),
            _msg("assistant", _call("read_file", f'{{"file_path": "/repo/f{step}.py"}}', "c")),
            _msg("user", _result("read_file", f"content {step}", "c")),
        ]
        summary = extractive_summary(messages, previous_summary=summary)
        assert validate_summary(summary) is None
    goal, constraints = _section_items(summary, 0), _section_items(summary, 1)
    for step in range(10):
        assert constraints.count(f"- Step {step}: never delete table t{step}.") == 1
        assert goal.count(f"- User request: Step {step}: never delete table t{step}.") == 1
        assert f"- File read: /repo/f{step}.py" in summary  # read only, never changed
    assert summary.count("## Goal") == 1
    assert "Step 0: never delete table t0." in "\n".join(_section_items(summary, 0))


def test_max_chars_trims_copied_items_first_keeps_original_task_and_latest_request() -> None:
    previous = GOOD_LLM.replace(
        "## Key Decisions\n",
        "## Key Decisions\n" + "".join(f"- old decision {i}\n" for i in range(80)),
    )
    messages: list[TranscriptMessage] = [_msg("user", _text("Please only use stdlib. Start now."))]
    for i in range(150):
        messages.append(
            _msg("assistant", _call("read_file", f'{{"path": "/repo/m{i}.py"}}', f"c{i}"))
        )
        messages.append(_msg("user", _result("read_file", f"module {i} body", f"c{i}")))
    messages.append(_msg("user", _text("Latest: summarise module 149 for me.")))
    summary = extractive_summary(messages, previous_summary=previous, max_chars=4000)
    assert len(summary) <= 4000
    assert validate_summary(summary) is None
    assert "Please only use stdlib." in summary and "never touch prod.yaml" in summary
    assert "Fix the off-by-one counter in /repo/src/app/main.py." in summary
    assert "Latest: summarise module 149 for me." in summary
    assert "Older items were left out to fit the summary size limit" in summary
    # items copied from the messages go first (the archive has them), oldest first
    assert "- File read: /repo/m0.py\n" not in summary and "/repo/m149.py" in summary
    assert "read_file(/repo/m0.py): ok" not in summary
    assert "old decision 0" in summary and "old decision 79" in summary
    assert "- Tests run with `cd /repo && pytest -q`" in summary  # written by the model


def test_max_chars_budgets_constraints_newest_first_and_cuts_the_request_before_them() -> None:
    constraints = " ".join(f"You must keep rule {i}." for i in range(60))
    messages = [_msg("user", _text(constraints))]
    summary = extractive_summary(messages, max_chars=2500)
    goal, kept = _section_items(summary, 0), _section_items(summary, 1)
    assert len(goal) == 1 and goal[0].startswith("- User request: You must keep rule 0.")
    assert kept[-1] == "- You must keep rule 59." and "- You must keep rule 0." not in kept
    assert len(summary) <= 2500
    assert "Older items were left out to fit the summary size limit" in summary
    tiny = extractive_summary(messages, max_chars=1000)
    # The protected request is cut (it is in the archive), the newest constraints stay.
    assert len(tiny) <= 1000 and "- You must keep rule 59." in tiny
    assert _section_items(tiny, 0)[0].startswith("- User request: You must keep rule 0.")


@pytest.mark.parametrize("bad", [999, 0, -5, True, 1.5e4])
def test_max_chars_must_be_a_sensible_int(bad: object) -> None:
    with pytest.raises(ValueError, match="max_chars"):
        extractive_summary([], max_chars=bad)  # type: ignore[arg-type]


def test_empty_input_still_yields_a_valid_summary() -> None:
    summary = extractive_summary([], language="zh")
    assert validate_summary(summary, language="zh") is None
    assert summary.startswith("## 目标\n- （无）\n")


_item_text = st.text(
    alphabet=st.sampled_from(list("abcxyz /._-:`()中文")), min_size=1, max_size=20
).filter(  # neither the text nor the item made of it ("- - ." reads as "-") is a placeholder
    lambda t: bool(t.strip()) and not is_placeholder(t) and not is_placeholder(f"- {t.strip()}")
)


def _summary_from(items: dict[int, list[str]]) -> str:
    lines: list[str] = []
    for index, title in enumerate(SECTION_TITLES["en"]):
        lines.append(f"## {title}")
        lines += [f"- {item.strip()}" for item in items.get(index, [])]
    return "\n".join(lines)


@settings(max_examples=100, deadline=None)
@given(
    previous=st.dictionaries(st.integers(0, 5), st.lists(_item_text, max_size=4), max_size=6),
    new=st.dictionaries(st.integers(0, 5), st.lists(_item_text, max_size=4), max_size=6),
)
# a bullet that opens a code fence ("- ```") is an item of its own, not code of the item above
@example(previous={3: [":"]}, new={3: ["```"]})
@example(previous={3: ["``` x"]}, new={3: ["~~~", "```"]})
def test_merge_sections_never_loses_an_item(
    previous: dict[int, list[str]], new: dict[int, list[str]]
) -> None:
    merged = merge_sections(_summary_from(previous), _summary_from(new))
    collapsed = re.sub(" +", " ", merged)  # items equal up to spacing count as duplicates
    for items in (*previous.values(), *new.values()):
        for item in items:
            assert re.sub(" +", " ", f"- {item.strip()}") in collapsed
    assert len(re.findall(r"^## ", merged, flags=re.MULTILINE)) == 6
    assert merge_sections(merged, _summary_from(new)) == merged  # nothing new: no growth


# --------------------------------------------------------------------------- preserve_previous

DROPPING_REPLY = """## Goal
Add the regression test.

## Constraints & Preferences
- (none)

## Progress
### Done
- [x] Patched `count_items()`
### In Progress
- (none)
### Blocked
- (none)

## Key Decisions
- Use pytest

## Next Steps
1. Commit

## Critical Context
- Tests: `pytest -q`

## Open Questions
- none yet
"""


def test_preserve_previous_restores_dropped_goal_constraints_and_context() -> None:
    previous = GOOD_LLM + "- E   AssertionError: expected 3, got 4\n"
    out = preserve_previous(previous, DROPPING_REPLY)
    assert validate_summary(out) is None
    assert _section_items(out, 0) == [
        "Add the regression test.",
        "Fix the off-by-one counter in /repo/src/app/main.py.",
    ]
    assert _section_items(out, 1) == ["- never touch prod.yaml"]  # the placeholder is replaced
    assert _section_items(out, 5) == [
        "- Tests: `pytest -q`",
        "- Tests run with `cd /repo && pytest -q`",
    ]
    # other sections are untouched, text for text
    for index in (2, 3, 4):
        assert _section_items(out, index) == _section_items(DROPPING_REPLY, index)
    assert out.endswith("## Open Questions\n- none yet\n")
    assert "Found the bug" not in out and "keep me" not in out  # only the three sections
    assert preserve_previous(previous, out) == out  # idempotent
    rendered = render_summary_message(previous, [("dialog/2025-01-15.jsonl", 9)])
    assert preserve_previous(rendered, DROPPING_REPLY) == out
    assert preserve_previous(GOOD_LLM, GOOD_LLM) == GOOD_LLM
    assert preserve_previous("", DROPPING_REPLY) == DROPPING_REPLY


def test_preserve_previous_recognises_items_kept_elsewhere_and_carried_blocks() -> None:
    previous = carry_verbatim(
        GOOD_LLM, ExtractedFacts(constraints=("Use tabs.", "No new deps."), file_paths=("/a.py",))
    )
    reply = DROPPING_REPLY.replace("- Use pytest", "- Use pytest; never touch prod.yaml")
    reply = reply.replace("- Tests: `pytest -q`", "- Tests: `pytest -q`\n- Use tabs.")
    out = preserve_previous(previous, reply)
    assert out.count("never touch prod.yaml") == 1  # present in another section already
    assert out.count("Use tabs.") == 1
    critical = "\n".join(_section_items(out, 5))
    assert "- Constraints (verbatim):\n  - No new deps." in critical
    assert "- Files:\n  - /a.py" in critical
    assert preserve_previous(previous, out) == out


def test_preserve_previous_chinese_and_missing_section() -> None:
    previous = "## 目标\n修复计数\n\n## 约束与偏好\n- 不要修改 prod.yaml\n"
    reply = "# 目标\n添加测试\n\n# 进展\n## 已完成\n- [x] 修复"
    out = preserve_previous(previous, reply, language="zh")
    assert out.startswith("# 目标\n添加测试\n\n修复计数\n")
    assert "# 约束与偏好\n- 不要修改 prod.yaml" in out
    assert preserve_previous(previous, out, language="zh") == out
    with pytest.raises(ValueError, match="language"):
        preserve_previous(previous, reply, language="fr")  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(
    previous=st.dictionaries(st.integers(0, 5), st.lists(_item_text, max_size=4), max_size=6),
    new=st.dictionaries(st.integers(0, 5), st.lists(_item_text, max_size=4), max_size=6),
)
def test_preserve_previous_keeps_the_three_sections_and_is_idempotent(
    previous: dict[int, list[str]], new: dict[int, list[str]]
) -> None:
    new_text = _summary_from(new)
    out = preserve_previous(_summary_from(previous), new_text)
    flat = " ".join(out.split())
    for index in (0, 1, 5):
        for item in previous.get(index, []):
            assert " ".join(item.split()) in flat
    for index in (2, 3, 4):
        assert _section_items(out, index) == _section_items(new_text, index)
    assert preserve_previous(_summary_from(previous), out) == out


# --------------------------------------------------------------------------- reviewer fixes


def test_every_request_of_a_batch_is_listed_verbatim() -> None:
    messages = [
        _msg("user", _text(f"Request number {i}: please do step {i}."), ts=f"T{i}")
        for i in range(5)
    ]
    messages.append(_msg("user", _text("y" * 2500), ts="T5"))
    goal = "\n".join(_section_items(extractive_summary(messages), 0))
    for i in range(5):
        assert f"- User request (T{i}): Request number {i}: please do step {i}." in goal
    assert "y" * 2000 + " … [500 more characters omitted]" in goal


def _batch(step: int, answered: bool) -> list[TranscriptMessage]:
    out = [
        _msg("user", _text(f"Drop table t{step} now."), ts=f"2025-01-15T10:{step:02d}:00"),
        _msg("assistant", _call("sql", f'{{"query": "DROP TABLE t{step}"}}', f"c{step}")),
        _msg("user", _result("sql", "ok", f"c{step}")),
    ]
    if answered:
        out.append(_msg("assistant", _text(f"Table t{step} was dropped.")))
    return out


def test_answered_requests_do_not_stay_open_after_newer_batches() -> None:
    first = extractive_summary(_batch(1, answered=False))
    assert "Open user request (2025-01-15T10:01:00): Drop table t1 now." in first
    second = extractive_summary(_batch(2, answered=False), previous_summary=first)
    in_progress = "\n".join(_section_items(second, 2))
    next_steps = "\n".join(_section_items(second, 4))
    assert "t1" not in in_progress and "t1" not in next_steps
    assert "Open user request (2025-01-15T10:02:00): Drop table t2 now." in in_progress
    assert next_steps.startswith("1. Continue with the user request (2025-01-15T10:02:00)")
    goal = "\n".join(_section_items(second, 0))
    assert "- User request (2025-01-15T10:01:00): Drop table t1 now." in goal  # history kept


def test_an_open_request_answered_in_a_batch_without_requests_is_closed() -> None:
    first = extractive_summary(_batch(1, answered=False))
    tail = [_msg("assistant", _text("Table t1 was dropped."))]
    second = extractive_summary(tail, previous_summary=first)
    assert "Open user request" not in second and "Continue with the user request" not in second
    assert "1. Check that this user request was fully answered (2025-01-15T10:01:00): " in second
    # a batch that is still working on it keeps it open
    working = [_msg("assistant", _call("sql", '{"query": "SELECT 1"}', "c9"))]
    still = extractive_summary(working, previous_summary=first)
    assert "- [ ] Open user request (2025-01-15T10:01:00): Drop table t1 now." in still


def test_a_request_trimmed_from_the_goal_survives_in_the_history() -> None:
    first = extractive_summary(_batch(1, answered=False))
    without_goal = first.replace("- User request (2025-01-15T10:01:00): Drop table t1 now.", "")
    second = extractive_summary(_batch(2, answered=True), previous_summary=without_goal)
    goal = "\n".join(_section_items(second, 0))
    assert "- User request (2025-01-15T10:01:00): Drop table t1 now." in goal


_BIG_MUST = (
    "Request {i}: you must keep the public API of module_{i} stable and you must run the "
    "full test suite before every commit. " + "Context for request {i} goes here. " * 40
)


@pytest.mark.parametrize("max_chars", [6000, 12000])
def test_sixty_large_compactions_stay_within_max_chars(max_chars: int) -> None:
    summary = ""
    for i in range(60):
        batch = [
            _msg("user", _text(_BIG_MUST.format(i=i)), ts=f"T{i:02d}"),
            _msg("assistant", _call("read_file", f'{{"file_path": "/repo/m{i}.py"}}', f"c{i}")),
            _msg("user", _result("read_file", f"Traceback (most recent call last): {i}", f"c{i}")),
        ]
        summary = extractive_summary(batch, previous_summary=summary, max_chars=max_chars)
        assert len(summary) <= max_chars
    assert validate_summary(summary) is None
    goal = _section_items(summary, 0)
    assert goal[0].startswith("- User request (T00): Request 0: you must keep")  # original task
    assert goal[-1].startswith("- User request (T59): Request 59:")  # latest request
    constraints = "\n".join(_section_items(summary, 1))
    assert "Request 59: you must keep the public API of module_59" in constraints
    assert "module_0 stable" not in constraints  # oldest constraints go first
    assert "Older items were left out to fit the summary size limit" in summary


@settings(max_examples=8, deadline=None)
@given(
    max_chars=st.integers(1000, 5000),
    sizes=st.lists(st.integers(50, 4000), min_size=3, max_size=12),
)
def test_summary_size_is_bounded_by_max_chars_or_the_protected_items(
    max_chars: int, sizes: list[int]
) -> None:
    summary = ""
    for i, size in enumerate(sizes):
        request = (f"R{i}: you must do thing {i}. " * size)[:size]
        batch = [_msg("user", _text(request), ts=f"T{i}")]
        summary = extractive_summary(batch, previous_summary=summary, max_chars=max_chars)
        goal = _section_items(summary, 0)
        protected = len(goal[0]) + (len(goal[-1]) if len(goal) > 1 else 0)
        assert len(summary) <= max(max_chars, protected + 600)
        assert "R0: you must do thing 0." in goal[0] and f"R{i}: " in goal[-1]


@pytest.mark.parametrize(
    "line",
    [
        "cat: /tmp/x.log: No such file or directory",
        "bash: rg: command not found",
        "mkdir: cannot create directory '/opt/x': Permission denied",
        "curl: (7) Failed to connect to localhost port 8000: Connection refused",
        "make: *** [Makefile:12: all] Error 2",
        "make[1]: Leaving directory '/src' Error 1",
        "Segmentation fault (core dumped)",
        "==== 1 failed, 3 passed in 0.12s ====",
        "FAILED tests/test_a.py::test_b - assert 1 == 2",
    ],
)
def test_common_shell_errors_are_error_lines(line: str) -> None:
    output = f"step one\n{line}\nstep two"
    assert extract_facts([_msg("user", _result("shell", output, "c"))]).error_lines == (line,)


@pytest.mark.parametrize(
    "line",
    [
        "See Error 404 handling in docs/http.md for details",
        "==== 0 failed, 12 passed in 0.40s ====",
        "12 passed in 0.40s",
        "Checked permissions on 3 files",
        "The directory listing follows",
    ],
)
def test_ordinary_lines_are_not_error_lines(line: str) -> None:
    assert extract_facts([_msg("user", _result("shell", line, "c"))]).error_lines == ()


def test_a_request_that_mentions_errors_is_not_an_error_line() -> None:
    messages = [
        TranscriptMessage(
            "user",
            "user",
            (TranscriptPart("text", "请搜索日志中的 `archiver` 错误，并说明原因。"),),
        ),
        TranscriptMessage(
            "user",
            "user",
            (
                TranscriptPart(
                    "text", "Search the logs for ERROR lines please.\nValueError: bad input x"
                ),
            ),
        ),
    ]
    assert extract_facts(messages).error_lines == ("ValueError: bad input x",)


def test_preserve_previous_does_not_take_a_fragment_of_another_item_for_the_item() -> None:
    # Found by hypothesis: "x -" was taken as present inside "- _x - :" and dropped.
    previous = _summary_from({0: ["_x"], 1: [":", "x -"]})
    out = preserve_previous(previous, _summary_from({}))
    assert _section_items(out, 1) == ["- :", "- x -"]
    assert preserve_previous(previous, out) == out
