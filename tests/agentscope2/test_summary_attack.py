"""The summary rules attacked from outside (issue 21 items 1-2): compactor replies shaped the
way real models write them, through :class:`SummaryCompactor` and through a real AgentScope
2.x agent with :class:`MemoryCompactionHook`. What the user stated is kept (a moved line
counts as kept), nothing junk is rendered, and the dropped lines add up by reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.core.summary import (
    Summary,
    SummaryCompactor,
    find_junk,
    render_summary_message,
)
from copaw_context.core.summary.model import ITEM_KEYS
from copaw_context.core.tokens import make_token_counter
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart
from copaw_context.testing import ScriptedChatModel, ScriptedTextModel, text_step
from tests.agent_history import config, seeded_history
from tests.helpers import make_agent
from tests.summaries import PREVIOUS_SUMMARY

ERROR = "TypeError: Cannot read properties of undefined (reading 'map')"
PATH = "src/报表 导出/export report.ts"
CONSTRAINT = "Never push to the main branch directly."


def _user(text: str) -> TranscriptMessage:
    return TranscriptMessage("user", "user", (TranscriptPart("text", text),))


def _bot(text: str) -> TranscriptMessage:
    return TranscriptMessage("assistant", "bot", (TranscriptPart("text", text),))


def _tool(name: str, args: str, output: str, call: str = "c1") -> list[TranscriptMessage]:
    return [
        TranscriptMessage("assistant", "bot", (TranscriptPart("tool_call", args, name, call),)),
        TranscriptMessage("user", "user", (TranscriptPart("tool_result", output, name, call),)),
    ]


def _session(plan: str = "Remaining:\n- add a regression test for empty rows") -> list[Any]:
    return [
        _user(f"Fix the export in {PATH}. {CONSTRAINT}"),
        *_tool(
            "write_file",
            json.dumps({"file_path": PATH, "content": "x"}),
            "wrote 1 line",
            "w1",
        ),
        *_tool(
            "shell",
            '{"command": "npm test"}',
            f"npm ERR! in workspace\n  at render (src/x.ts:3)\n{ERROR}\n1 failed, 22 passed",
        ),
        _bot("I decided to keep papaparse.\nReason: it handles quoted newlines."),
        _bot(plan),
    ]


def _reply(
    *,
    goal: str = "- Fix the export",
    constraints: str = "- (none)",
    done: str = "- (none)",
    blocked: str = "- (none)",
    decisions: str = "- (none)",
    steps: str = "- (none)",
    critical: str = "- (none)",
) -> str:
    return (
        f"## Goal\n{goal}\n\n## Constraints & Preferences\n{constraints}\n\n"
        f"## Progress\n### Done\n{done}\n### In Progress\n- (none)\n### Blocked\n{blocked}\n\n"
        f"## Key Decisions\n{decisions}\n\n## Next Steps\n{steps}\n\n"
        f"## Critical Context\n{critical}\n"
    )


def _compactor() -> SummaryCompactor:
    return SummaryCompactor(mode="llm", counter=make_token_counter("estimate"), retry_delay=0.001)


async def _summarise(reply: str, messages: list[Any] | None = None) -> Any:
    model = ScriptedTextModel([reply, reply])
    return await _compactor().summarise(messages or _session(), previous=None, model=model)


def _assert_user_facts_kept(text: str) -> None:
    for fact in (CONSTRAINT, ERROR, PATH, "handles quoted newlines"):
        assert fact in text, f"{fact!r} lost:\n{text}"


# --------------------------------------------------------------------------- findings


@pytest.mark.parametrize(
    "sign_off",
    [
        "Let me know if you need anything else!",
        "Let me know if you want more detail.",
        "Hope this helps!",
        "Feel free to ask if you have any questions.",
        "如果还有其他需要，请告诉我。",
        "希望对你有帮助！",
        "---\n*如有任何问题，欢迎随时提问！*",
        "**Let me know if you'd like me to expand any section.**",
    ],
)
async def test_trailing_chatter_after_the_summary_is_not_rendered(sign_off: str) -> None:
    # models end with an offer; it lands under the last section as an item of its own
    reply = _reply(constraints=f"- {CONSTRAINT}", critical=f"- {ERROR}") + f"\n{sign_off}\n"
    result = await _summarise(reply)
    assert result.method == "llm"
    assert sign_off.split("\n")[-1].strip("*") not in result.text
    assert find_junk(result.text) == []
    assert result.dropped_by_reason.get("acknowledgement") == 1
    assert sum(result.dropped_by_reason.values()) == result.dropped_lines
    _assert_user_facts_kept(result.text)


async def test_a_moved_constraint_is_not_rendered_after_the_chatter() -> None:
    reply = _reply(constraints="* Do not commit straight to main") + "\nLet me know if…\n"
    result = await _summarise(reply)
    assert "Let me know" not in result.text
    assert "* Do not commit straight to main" in Summary.parse(result.text).critical  # moved
    assert CONSTRAINT in result.text


@pytest.mark.parametrize(
    "plan",
    [
        "Remaining:\n- add a regression test for empty rows",
        "TODO: add a regression test for empty rows",
        "接下来：add a regression test for empty rows",
    ],
)
async def test_the_last_plan_is_the_next_step_when_the_model_lists_none(plan: str) -> None:
    result = await _summarise(
        _reply(constraints=f"- {CONSTRAINT}", critical=f"- {ERROR}"), _session(plan)
    )
    steps = Summary.parse(result.text).next_steps
    assert any("add a regression test for empty rows" in step for step in steps), result.text
    assert find_junk(result.text) == []
    assert sum(result.dropped_by_reason.values()) == result.dropped_lines


async def test_a_next_steps_placeholder_is_no_duplicate_of_the_done_placeholder() -> None:
    # both sections say "(none)": Next Steps must not be left a bare heading
    messages = [_user(f"Fix the export in {PATH}. {CONSTRAINT}")]
    result = await _summarise(_reply(constraints=f"- {CONSTRAINT}"), messages)
    assert Summary.parse(result.text).next_steps == ["- (none)"], result.text
    assert "duplicate" not in result.dropped_by_reason


# --------------------------------------------------------------------------- what held


@pytest.mark.parametrize(
    "reply",
    [
        # `*` / `+` / `1.` bullets, nested bullets, a reason on the next line
        _reply(
            goal=f"* Fix the export in `{PATH}`",
            constraints=f"* {CONSTRAINT}\n  + ask before any push",
            done="+ Ran npm test",
            decisions="1. Keep papaparse\n   Reason: it handles quoted newlines",
            steps="1. Add a regression test for empty rows",
            critical=f"```\n{ERROR}\n```",
        ),
        # `<summary>` tags around it
        "<summary>\n" + _reply(constraints=f"- {CONSTRAINT}") + "</summary>\n",
        # a markdown table holding the exact error and the path
        _reply(critical=f"| kind | value |\n|---|---|\n| error | {ERROR} |\n| path | {PATH} |"),
        # sections in another order, "and" for "&"
        f"## Next Steps\n- add a regression test for empty rows\n"
        f"## Key Decisions\n- Keep papaparse because it handles quoted newlines\n"
        f"## Goal\n- Fix the export\n## Critical Context\n- {ERROR}\n"
        f"## Constraints and Preferences\n- {CONSTRAINT}\n"
        "## Progress\n### Done\n- none\n### In Progress\n- none\n### Blocked\n- none\n",
        # Chinese headings, English body
        f"## 目标\n- Fix the export in {PATH}\n## 约束与偏好\n- {CONSTRAINT}\n## 进展\n"
        f"### 已完成\n- （无）\n### 进行中\n- （无）\n### 受阻\n- {ERROR}\n## 关键决策\n"
        "- Keep papaparse because it handles quoted newlines\n## 下一步\n"
        "1. add a regression test for empty rows\n## 关键上下文\n- （无）\n",
        # English headings, Chinese body: a paraphrase in another language moves
        f"## Goal\n- 修复 {PATH} 的导出\n## Constraints & Preferences\n- 不要直接推送到 main 分支\n"
        "## Progress\n### Done\n- （无）\n### In Progress\n- （无）\n### Blocked\n- （无）\n"
        "## Key Decisions\n- 保留 papaparse，因为它能处理带引号的换行\n## Next Steps\n"
        f"1. 补一个空行的回归测试\n## Critical Context\n- {ERROR}\n",
        # a paraphrased constraint and a reasonless decision (both move), a nested group
        _reply(
            constraints="- Rules:\n  - The user prefers that changes go through pull requests",
            decisions="- Keep papaparse",
        ),
    ],
    ids=["bullets", "tags", "table", "reordered", "zh-headings", "zh-body", "paraphrased"],
)
async def test_real_model_shapes_keep_what_the_user_stated_and_render_no_junk(
    reply: str,
) -> None:
    result = await _summarise(reply)
    assert result.method == "llm", result.fallback_reason
    _assert_user_facts_kept(result.text)
    assert find_junk(result.text, Summary.parse(reply).language) == []
    assert sum(result.dropped_by_reason.values()) == result.dropped_lines
    # an item of the reply that is gone is counted (one item, however many lines)
    parsed = Summary.parse(reply)
    items = [item for key in ITEM_KEYS for item in parsed.items(key)]
    gone = [item for item in items if item.split("\n")[0].strip() not in result.text]
    assert len(gone) <= result.dropped_lines, (gone, result.dropped_by_reason)


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps({"summary": _reply(constraints=f"- {CONSTRAINT}")}),  # JSON-wrapped
        "**Goal**\n- Fix it\n\n**Next Steps**\n- test",  # bold headings, sections missing
        _reply(critical="\n".join(f"- detail {n} of the export pipeline" for n in range(900))),
        "Generated summary",  # LangChain's MockChatModel: prose, no headings
        "",  # LangChain: an empty summary
    ],
    ids=["json", "bold-headings", "twice-the-cap", "prose", "empty"],
)
async def test_an_unusable_reply_falls_back_and_keeps_every_fact(reply: str) -> None:
    result = await _summarise(reply)
    assert result.method == "extractive" and result.fallback_reason
    _assert_user_facts_kept(result.text)
    assert "add a regression test for empty rows" in result.text
    assert find_junk(result.text) == []


async def test_an_exact_error_in_a_code_block_is_kept_and_the_wrappers_are_not() -> None:
    reply = _reply(
        constraints=f"- {CONSTRAINT}",
        blocked=f"- npm test fails:\n  ```\n  {ERROR}\n  ```",
        decisions="- Keep papaparse because it handles quoted newlines",
        steps="1. add a regression test for empty rows",
    )
    result = await _summarise(reply)
    assert ERROR in result.text
    for noise in ("npm ERR! in workspace", "1 failed, 22 passed"):
        assert noise not in result.text
    assert find_junk(result.text) == []


async def test_a_reply_wrapped_in_a_markdown_fence_is_read() -> None:
    # AgentScope's and ReMe's compressors see models fence their answer as ```markdown
    reply = "```markdown\n" + _reply(constraints=f"- {CONSTRAINT}") + "```"
    result = await _summarise(reply)
    assert result.method == "llm" and "```" not in result.text
    _assert_user_facts_kept(result.text)


async def test_a_chain_of_hostile_replies_keeps_the_users_constraint() -> None:
    # ported in spirit from the chain tests of QwenPaw's compactor: each compaction sees a
    # reply that paraphrases or drops the constraint
    compactor = _compactor()
    replies = [
        _reply(constraints="- Avoid pushing to main"),
        _reply(),
        _reply(constraints="- Prefer squash merges") + "\nLet me know if…",
        _reply(goal="- Keep going"),
    ]
    previous = None
    result = await compactor.summarise(
        _session(), previous=None, model=ScriptedTextModel([replies[0]] * 2)
    )
    previous = result.summary
    for n, reply in enumerate(replies[1:]):
        span = [_user(f"Go on with part {n}."), _bot(f"Part {n} is done.")]
        model = ScriptedTextModel([reply] * 2)
        result = await compactor.summarise(span, previous=previous, model=model)
        previous = result.summary
        assert CONSTRAINT in result.text, result.text
        assert ERROR in result.text
        assert find_junk(result.text) == []


# --------------------------------------------------------------------------- the real path


async def test_the_agents_compaction_event_counts_the_chatter(tmp_path: Path) -> None:
    events: list[ContextEvent] = []
    reply = PREVIOUS_SUMMARY + "\n\nLet me know if you need anything else!"
    compactor = ScriptedChatModel([text_step(reply)] * 3, context_size=32768)
    hook = MemoryCompactionHook(
        config(4000, compactor="llm"), tmp_path, compactor_model=compactor, on_event=events.append
    )
    hook.compactor_retry_delay = 0.001
    agent = await make_agent(
        hook, ScriptedChatModel([text_step("still working")], context_size=4000)
    )
    agent.state.context = seeded_history(8)
    agent.state.summary = render_summary_message(
        PREVIOUS_SUMMARY, [("dialog/2026-11-28.jsonl", 12)]
    )
    await agent.reply(UserMsg("user", "What next?"))
    (event,) = [e for e in events if e.kind == "compaction"]
    assert event.method == "llm"
    summary = str(agent.state.summary)
    assert "Let me know" not in summary
    assert "Never modify vendor/ files" in summary
    assert event.summary_dropped_by_reason.get("acknowledgement") == 1
    assert sum(event.summary_dropped_by_reason.values()) == event.summary_dropped_lines


async def test_no_none_under_constraints_beside_the_users_carried_constraint() -> None:
    # issue 21 names it junk: "(none)" under Constraints while the user did state one
    result = await _summarise(_reply(critical=f"- {ERROR}"))
    doc = Summary.parse(result.text)
    assert doc.constraints == [f"- {CONSTRAINT}"], result.text
    assert "Constraints (verbatim)" not in result.text
    assert sum(result.dropped_by_reason.values()) == result.dropped_lines


@pytest.mark.parametrize(
    "item",
    [
        "If you need the old API, the shim is in src/compat.ts",
        "Let the exporter stream rows (the user asked for it)",
        "Hope is the name of the staging server",
        "如果需要旧接口，兼容层在 src/compat.ts",
    ],
)
def test_a_fact_that_starts_like_a_sign_off_is_no_junk(item: str) -> None:
    text = _reply(critical=f"- {item}")
    assert find_junk(text, Summary.parse(text).language) == []


async def test_the_noise_find_junk_lists_beside_an_error_is_dropped() -> None:
    # find_junk listed "Error: 1 failed, 22 passed" as error_noise; drop_junk kept it
    reply = _reply(
        constraints=f"- {CONSTRAINT}",
        blocked=f"- Error: {ERROR}",
        critical="- Error: 1 failed, 22 passed",
    )
    result = await _summarise(reply)
    assert "1 failed, 22 passed" not in result.text and ERROR in result.text
    assert find_junk(result.text) == []
    assert result.dropped_by_reason.get("error_noise") == 1
    assert sum(result.dropped_by_reason.values()) == result.dropped_lines


async def test_a_tally_and_a_wrapper_listed_beside_the_error_are_dropped() -> None:
    # the error block keeps errors: the model's own items that only surround it go
    reply = _reply(
        constraints=f"- {CONSTRAINT}",
        blocked=f"- npm ERR! in workspace\n- 1 failed, 22 passed\n- {ERROR}",
    )
    result = await _summarise(reply)
    blocked = Summary.parse(result.text).blocked
    assert blocked == [f"- {ERROR}"], result.text
    assert result.dropped_by_reason.get("error_noise") == 2
    assert find_junk(result.text) == []
    assert sum(result.dropped_by_reason.values()) == result.dropped_lines


def test_a_tally_alone_is_no_junk() -> None:
    # no error beside it: "1 failed, 22 passed" is all the summary knows of the failure
    text = _reply(blocked="- 1 failed, 22 passed")
    assert find_junk(text) == []
