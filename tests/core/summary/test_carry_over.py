"""What the LLM compactor carries from one summary to the next when the model leaves it out:
the user's task, the constraints, the exact errors and paths, the decisions and the plan,
also when the model's own reply fills the cap (issue 21: a fact lost once is lost for good)."""

from __future__ import annotations

from typing import Any

import pytest

from copaw_context.core.summary import Summary, SummaryCompactor, carry_facts, extractive, fit
from copaw_context.core.summary.carry import essentials, keep_decided
from copaw_context.core.summary.facts import extract_facts
from copaw_context.core.tokens import make_token_counter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ScriptedTextModel

_TASK = "Goal for this session: ship the invoice service's PDF export."
_CONSTRAINT = "Never edit files under vendor/."


def _compactor(**options: Any) -> SummaryCompactor:
    settings: dict[str, Any] = {"mode": "llm", "counter": make_token_counter("estimate")}
    settings["reference_tokens"] = 10**9
    return SummaryCompactor(**{**settings, "retry_delay": 0.001, **options})


def _say(role: str, text: str) -> TranscriptMessage:
    return TranscriptMessage(
        role, "user" if role == "user" else "bot", (TranscriptPart("text", text),)
    )


def _reply(done: int = 1, goal: str = "Continue the invoice work.") -> str:
    items = "\n".join(
        f"- [x] Reviewed part {i} of the invoice renderer in detail." for i in range(done)
    )
    return (
        f"## Goal\n- {goal}\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n### Done\n"
        f"{items}\n### In Progress\n- [ ] Working on it.\n### Blocked\n- (none)\n\n"
        "## Key Decisions\n- (none)\n\n## Next Steps\n1. Keep going.\n\n"
        "## Critical Context\n- The renderer lives in src.\n"
    )


async def test_the_users_task_is_carried_when_the_model_rewrites_the_goal() -> None:
    messages = [
        _say("user", "Noted."),
        _say("user", f"{_TASK} {_CONSTRAINT}"),
        _say("assistant", "ok"),
    ]
    result = await _compactor().summarise(messages, model=ScriptedTextModel([_reply()]))
    doc = Summary.parse(result.text)
    assert result.method == "llm"
    assert doc.goal[0] == f"- User request: {_TASK}"  # first: the trim keeps the first item
    assert "- Continue the invoice work." in doc.goal
    # the constraint sentence is the constraint's, not hidden inside the task
    assert any(_CONSTRAINT in item for item in doc.constraints), doc.constraints


def test_the_task_skips_acknowledgements_and_keeps_chinese_word_for_word() -> None:
    zh = "这次的目标：发布发票服务的 PDF 导出。不要修改 vendor/ 下的文件。"
    facts = extract_facts([_say("user", "好的"), _say("user", zh)])
    assert facts.task == "这次的目标：发布发票服务的 PDF 导出。"
    assert extract_facts([_say("user", "Noted."), _say("user", "ok thanks")]).task is None
    summary = Summary.parse(_reply(), "zh")
    goal = carry_facts(summary, facts).goal
    assert goal[0] == "- 用户请求：这次的目标：发布发票服务的 PDF 导出。"
    present = Summary.parse(_reply(goal="这次的目标：发布发票服务的 PDF 导出。"), "zh")
    assert carry_facts(present, facts).goal == present.goal  # word for word there already


async def test_a_previous_summary_past_the_cap_still_passes_on_its_essentials() -> None:
    previous = Summary.parse(
        f"## Goal\n- User request: {_TASK}\n- Continue the work.\n\n"
        f"## Constraints & Preferences\n- {_CONSTRAINT}\n\n## Progress\n### Done\n"
        "- [x] Read the tax module.\n\n"
        "## Key Decisions\n- Load the rates from rates.toml because finance edits that file.\n\n"
        "## Next Steps\n1. Planned next: ask finance to review rates.toml\n\n"
        "## Critical Context\n- Error: E   KeyError: 'CH'\n- File: invoice/tax.py\n"
        "- Some prose the model wrote about the layout.\n"
    )
    compactor = _compactor(max_summary_chars=1200)
    reply = _reply(done=14)  # the model's own reply is near the cap, the facts left out
    assert 1000 < len(reply) <= 1200
    result = await compactor.summarise(
        [_say("user", "go on"), _say("assistant", "ok")],
        previous=previous,
        model=ScriptedTextModel([reply]),
    )
    text = result.text
    assert len(text) <= 1200 and result.method == "llm"
    for fact in (
        f"User request: {_TASK}",
        _CONSTRAINT,
        "Error: E   KeyError: 'CH'",
        "File: invoice/tax.py",
        "Load the rates from rates.toml because finance edits that file.",
        "Planned next: ask finance to review rates.toml",
    ):
        assert fact in text, fact
    assert "Some prose the model wrote" not in text  # past the cap: the model's pruning
    assert "Reviewed part 0 " not in text and "Reviewed part 13 " in text  # oldest prose first


def test_prose_beside_exact_errors_does_not_push_the_errors_out() -> None:
    errors = [f"- Error: tests/test_tax.py:{n}: KeyError: 'C{n}'" for n in range(4)]
    prose = [
        f"- A long note number {n} the model wrote about the renderer layout." for n in range(12)
    ]
    doc = Summary.parse("## Goal\n- Ship it.\n\n## Critical Context\n" + "\n".join(prose + errors))
    fitted = fit(doc, 900).text()
    assert len(fitted) <= 900
    assert all(error[2:] in fitted for error in errors), fitted
    assert "note number 0 " not in fitted  # the prose goes first, the oldest first


def test_carried_files_join_the_group_that_is_there() -> None:
    summary = Summary.parse(_reply())
    first = carry_facts(summary, extract_facts([_tool_read("a/one.py")]))
    second = carry_facts(first, extract_facts([_tool_read("b/two.py")]))
    groups = [item for item in second.critical if item.startswith("- Files:")]
    assert groups == ["- Files:\n  - a/one.py\n  - b/two.py"], second.critical


def test_previous_decisions_and_planned_steps_stay_until_a_new_plan() -> None:
    previous = Summary.parse(
        "## Goal\n- Ship it.\n\n## Key Decisions\n- Use rates.toml because finance edits it.\n\n"
        "## Next Steps\n1. Planned next: ask finance to review rates.toml\n"
    )
    kept = keep_decided(Summary.parse(_reply()), previous)
    assert "- Use rates.toml because finance edits it." in kept.decisions
    assert "(none)" not in kept.render().split("## Key Decisions", 1)[1].split("##", 1)[0]
    assert "1. Planned next: ask finance to review rates.toml" in kept.next_steps
    plan = "Next: 1. run the full suite 2. tag the release"
    facts = extract_facts([_say("assistant", plan)])
    assert facts.plan, "the assistant stated a plan"
    replanned = carry_facts(kept, facts)
    assert not [s for s in replanned.next_steps if "ask finance" in s]  # superseded
    assert any("run the full suite" in s for s in replanned.next_steps)
    assert keep_decided(kept, previous) is kept  # nothing missing: itself


def test_essentials_are_the_task_constraints_and_exact_items() -> None:
    doc = Summary.parse(
        "## Goal\n- Continue.\n- Polish.\n- User request: ship it\n\n"
        "## Constraints & Preferences\n- never push\n\n"
        "## Critical Context\n- prose\n- Error: boom\n- File: a.py\n"
    )
    kept = essentials(doc)
    assert kept.goal == ["- Continue.", "- User request: ship it"]
    assert kept.constraints == ["- never push"]
    assert kept.critical == ["- Error: boom", "- File: a.py"]


def _tool_read(path: str) -> TranscriptMessage:
    call = TranscriptPart("tool_call", f'{{"file_path": "{path}"}}', "edit_file", "c1")
    return TranscriptMessage("assistant", "bot", (call,))


def test_a_plan_heading_is_no_step_and_an_inline_list_stays_whole() -> None:
    listed = extract_facts([_say("assistant", "Next steps:\n1. run the full suite\n2. tag it")])
    assert listed.plan == ("run the full suite", "tag it")  # not "Next steps:" as a step
    inline = extract_facts([_say("assistant", "Next: 1. run the full suite 2. tag it")])
    assert inline.plan == ("run the full suite", "tag it")  # not "Next: 1."


def _call(tool: str, path: str, call_id: str) -> list[TranscriptMessage]:
    call = TranscriptPart("tool_call", f'{{"file_path": "{path}"}}', tool, call_id)
    result = TranscriptPart("tool_result", "ok", tool, call_id)
    return [
        TranscriptMessage("assistant", "bot", (call,)),
        TranscriptMessage("user", "user", (result,)),
    ]


def test_a_file_only_read_is_told_apart_and_left_out_before_a_changed_one() -> None:
    messages = [_say("user", "fix the tax rates")]
    for n in range(30):
        messages += _call("read_file", f"src/module_{n:02d}/reader.py", f"r{n}")
    messages += _call("search_replace", "invoice/tax.py", "w1")  # an edit, despite "search"
    facts = extract_facts(messages)
    assert (
        "invoice/tax.py" not in facts.read_paths and "src/module_00/reader.py" in facts.read_paths
    )
    summary = extractive(messages, max_chars=1000)
    text = summary.text()
    assert "- File: invoice/tax.py" in text  # changed: kept
    assert "File read: src/module_29/reader.py" in text or len(text) > 900
    assert "File read: src/module_00/reader.py" not in text  # only read, oldest: left out first
    zh = extractive([_say("user", "修复税率"), *_call("cat", "a.py", "c1")], language="zh")
    assert "- 读取的文件：a.py" in zh.text()


def test_a_file_read_then_changed_is_listed_as_changed_once() -> None:
    first = extractive([_say("user", "look at a.py"), *_call("read_file", "a.py", "c1")])
    assert "- File read: a.py" in first.text()
    second = extractive(_call("edit_file", "a.py", "c2"), previous=first)
    text = second.text()
    assert "- File: a.py" in text and "File read: a.py" not in text
    assert [i for i in second.critical if "a.py" in i] == ["- File: a.py"], second.critical
    llm_side = carry_facts(Summary.parse(_reply()), extract_facts(_call("cat", "b.py", "c3")))
    assert "- Files read:\n  - b.py" in llm_side.critical
    promoted = carry_facts(llm_side, extract_facts(_call("write_file", "b.py", "c4")))
    assert "- Files:\n  - b.py" in promoted.critical and "Files read" not in promoted.text()


def _run(tool: str, path: str, call_id: str, output: str, failed: bool = False) -> list[Any]:
    call = TranscriptPart("tool_call", f'{{"file_path": "{path}"}}', tool, call_id)
    result = TranscriptPart("tool_result", output, tool, call_id, failed)
    return [
        TranscriptMessage("assistant", "bot", (call,)),
        TranscriptMessage("user", "user", (result,)),
    ]


def test_a_clean_read_is_no_progress_item_but_a_failed_read_and_an_edit_are() -> None:
    """Reading a file is listed once, under Critical Context as read; it is no Done item,
    which in a long session crowded out the runs that did pass."""
    messages = [
        _say("user", "fix a.py"),
        *_run("read_file", "a.py", "c1", "1  def total(xs):\n2      return sum(xs) + 1"),
        *_run("cat", "b.py", "c2", "cat: b.py: No such file or directory", failed=True),
        *_run("write_file", "a.py", "c3", "Wrote 2 lines to a.py"),
    ]
    facts = extract_facts(messages)
    assert [o.split(": ", 1)[0] for o in facts.tool_outcomes] == ["cat(b.py)", "write_file(a.py)"]
    text = extractive(messages).text()
    assert "read_file(" not in text and "def total" not in text
    assert "- [x] write_file(a.py): ok — Wrote 2 lines to a.py" in text.splitlines()
    assert "- cat(b.py): error — cat: b.py: No such file or directory" in text  # a failed read
    zh = extractive(
        [_say("user", "看一下 c.py"), *_run("cat", "c.py", "c4", "1  x = 1")], language="zh"
    ).text()
    assert "- 读取的文件：c.py" in zh.splitlines() and "cat(c.py)" not in zh


@pytest.mark.parametrize("depth", [1, 4, 9])  # the saved outputs' folder: any length
def test_a_saved_output_goes_before_a_previous_summarys_own_item(depth: int) -> None:
    """A failed run's saved full output (``File: .../tool_result/<32 hex>.txt``) is named by
    its notice and the archive: it is left out with the items copied from the messages, before
    a fact only the previous summary holds (how long its path is does not matter)."""
    folder = "/".join(["/ws"] + [f"level{n}" for n in range(depth)] + ["tool_result"])
    saved = [f"- File: {folder}/{n:032x}.txt" for n in range(3)]
    doc = Summary.parse(
        "## Goal\n- Ship the parser fix: "
        + "the lexer must accept every token. " * 24
        + "\n\n## Progress\n### In Progress\n- [ ] Write the test\n\n"
        "## Critical Context\n- /repo/src/parser.c:412 is where tok is undeclared\n"
        + "\n".join(saved)
    ).canonical()
    fitted = fit(doc, len(doc.text()) - 30).text()  # the trim's note takes 110 more
    assert "/repo/src/parser.c:412 is where tok is undeclared" in fitted
    assert saved[0][2:] not in fitted  # the oldest saved output went first


def test_the_extractive_fallback_keeps_the_task_below_a_goal_a_model_wrote() -> None:
    """A model's summary came first (its Goal is its own words); the compactor then failed
    and the extractive summary, tight, merges a batch whose first request is the task."""
    previous = Summary.parse(_reply(done=3))
    messages = [
        _say("user", f"{_TASK} {_CONSTRAINT}"),
        _say("assistant", "ok " + "detail " * 200),
        _say("user", "and check the totals " + "please " * 60),
        _say("assistant", "done"),
    ]
    summary = extractive(messages, previous=previous, max_chars=1000)
    assert len(summary.text()) <= 1000
    assert any(_TASK in item for item in summary.goal), summary.goal
