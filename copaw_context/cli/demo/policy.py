"""The demo's scripted assistant: a ``ScriptedChatModel`` step playing a long agent session.

`DemoPolicy` is a `ScriptedChatModel` step that plays the assistant: it calls tools
(several at once every few steps), follows truncation notices with `read_file`, ends
each user turn with a text answer, and writes a structured summary when called by a
tool-less compactor. It only looks at its own counters and the latest tool results,
so it works on any context shape (after compaction, old messages are gone). It also
answers the long-term memory summariser and searches the memory once in its last turn.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from typing import Any

from agentscope.message import Msg, TextBlock, ToolCallBlock, ToolResultBlock

from copaw_context.cli.demo._text import preview
from copaw_context.cli.demo.content import BIG_PAGE_URL
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.testing import ModelBlock, ModelCall

__all__ = ["DemoPolicy", "demo_policy", "demo_user_turns"]

_MAX_TURN_STEPS = 40  # stays below the agent's default max_iters (50)
_MAX_READS_IN_A_ROW = 2
_CONSTRAINT_WORDS = ("never", "always", "must", "do not", "don't", "only", "不要", "必须", "禁止")
_INSTRUCTION_MARKERS = ("structured summary", "continuation summary", "summary from the conv")


# Each user turn with the tool calls it cycles through: (tool, argument, values); round i
# uses values[i % len(values)] with "{i}" filled in.
_Agenda = tuple[tuple[str, str, tuple[str, ...]], ...]
_DOCS = "https://docs.example.com"
# fmt: off
_TURNS: tuple[tuple[str, _Agenda], ...] = (
    ("Our CI is red. Run the build for target `all` and tell me exactly which line fails. "
     "Never modify vendor/ files.",
     (("run_build", "target", ("all",)), ("list_dir", "path", ("src",)))),
    (f"Fetch {BIG_PAGE_URL} and the guide pages, then tell me which config keys control the cache.",
     (("fetch_page", "url", (BIG_PAGE_URL, _DOCS + "/guide/p{i}.html", _DOCS + "/faq/{i}.html")),)),
    ("请阅读《部署指南》和《上下文压缩设计》，用中文总结关键步骤，不要遗漏注意事项。",
     (("read_doc", "name", ("部署指南", "上下文压缩设计", "配置说明")),)),
    ("Search the logs for `timeout` and `retry`; group the errors by service.",
     (("search_logs", "query", ("timeout", "retry")),)),
    ("List src/ and vendor/ so we know what is ours. Keep answers short, bullet points only.",
     (("list_dir", "path", ("src", "vendor", "docs")),)),
    ("Rebuild `parser` and compare the error with the first build. Do not touch Makefile.",
     (("run_build", "target", ("parser",)), ("read_doc", "name", ("构建说明",)))),
    ("Fetch the release notes page and check whether the parser change is mentioned.",
     (("fetch_page", "url", (_DOCS + "/releases/v{i}.html",)),)),
    ("请搜索日志中的 `archiver` 错误，并说明是否与压缩有关。回答请使用中文。",
     (("search_logs", "query", ("archiver",)), ("read_doc", "name", ("归档设计",)))),
    ("Read the doc `运维手册` and list every step that needs manual approval.",
     (("read_doc", "name", ("运维手册",)),)),
    ("Search the logs for `shard` failures in the worker service since the 20th.",
     (("search_logs", "query", ("shard-{i}",)),)),
    ("Run the `test` target and report only failures; never paste whole logs into the answer.",
     (("run_build", "target", ("test",)), ("search_logs", "query", ("test",)))),
    ("Wrap up: summarise everything we found today and propose the fix for src/parser.c.",
     (("run_build", "target", ("all",)), ("fetch_page", "url", (_DOCS + "/fix/{i}.html",)))),
)
# fmt: on
_USER_TURNS = tuple(text for text, _ in _TURNS)


def demo_user_turns() -> list[str]:
    """Realistic user requests, mixing constraints, English and Chinese."""
    return list(_USER_TURNS)


def _text_of(output: str | list[Any]) -> str:
    if isinstance(output, str):
        return output
    return "\n".join(block.text for block in output if isinstance(block, TextBlock))


_SENTENCE_END_RE = re.compile(r"[.!?\n。！？；;]")
# Bounded repetitions keep matching linear even on huge, space-free tool output.
_ERROR_RE = re.compile(
    r"(?<![^\s\]])[^\s:\]]{1,200}:\d{1,9}:\d{1,9}: error: [^\n]{1,300}|make: \*\*\* [^\n]{1,300}"
)
_PATH_RE = re.compile(r"(?<![\w/])(?:[\w.-]{1,100}/){1,20}[\w.-]{1,100}\.\w{1,10}")
_MINED_TAIL = 4096  # errors sit at the end of logs; bounded input keeps mining cheap


def _is_instruction(text: str) -> bool:
    """Compaction prompts and injected hints, which are not the user's request."""
    head = text.lstrip()[:400].lower()
    return head.startswith("<system") or any(marker in head for marker in _INSTRUCTION_MARKERS)


def _summary_inputs(messages: list[Msg]) -> tuple[list[str], str]:
    """The user's requests and all conversation text to mine for errors and paths."""
    requests: list[str] = []
    mined: list[str] = []
    for msg in messages:
        if msg.role == "system":
            continue
        for block in msg.content:
            if isinstance(block, ToolResultBlock):
                mined.append(_text_of(block.output)[-_MINED_TAIL:])
            elif isinstance(block, TextBlock) and not _is_instruction(block.text):
                mined.append(block.text)
                if msg.role == "user":
                    requests.append(block.text)
    if not requests:  # e.g. the whole transcript arrives inside the instruction message
        last_user = next((m for m in reversed(messages) if m.role == "user"), None)
        requests = [(last_user.get_text_content() or "") if last_user else ""]
    return requests, "\n".join([*mined, requests[-1]])


def _is_memory_request(messages: list[Msg]) -> bool:
    """The long-term memory summariser asks (its system prompt names long-term memory)."""
    system = next((m for m in messages if m.role == "system"), None)
    text = (system.get_text_content() or "") if system else ""
    return "long-term memory" in text or "长期记忆" in text


def _bullets(items: list[str], empty: str) -> str:
    return "\n".join(f"- {item}" for item in items) or f"- {empty}"


def _summary_markdown(messages: list[Msg]) -> str:
    """A six-section summary built by simple extraction, linear in the input size."""
    requests, text = _summary_inputs(messages)
    goal = next((line.strip() for line in requests[-1].splitlines() if line.strip()), "")
    goal = goal[:300] or "Continue the user's current request."
    sentences = (part.strip() for part in _SENTENCE_END_RE.split("\n".join(requests)))
    constraints = [p for p in sentences if any(w in p.lower() for w in _CONSTRAINT_WORDS)]
    constraints = list(dict.fromkeys(c[:200] for c in constraints))[-5:]
    errors = list(dict.fromkeys(_ERROR_RE.findall(text)))[-5:]
    paths = list(dict.fromkeys(_PATH_RE.findall(text)))[-8:]
    return (
        f"## Goal\n{goal}\n\n"
        f"## Constraints & Preferences\n{_bullets(constraints, 'None stated.')}\n\n"
        f"## Progress\n### Done\n- [x] Reviewed {len(messages)} messages of the conversation\n"
        f"### In Progress\n- [ ] {goal}\n"
        f"### Blocked\n{_bullets(errors, 'Nothing blocked.')}\n\n"
        "## Key Decisions\n- Read long tool outputs from their saved files instead of "
        "re-running tools\n\n"
        "## Next Steps\n1. Continue the current request\n2. Report findings to the user\n\n"
        f"## Critical Context\n{_bullets([*errors, *paths], 'No paths or errors recorded.')}\n"
    )


def _check_int(name: str, value: object, minimum: int, meaning: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum} ({meaning}), got {value!r}")


class DemoPolicy:
    """A scripted assistant for `ScriptedChatModel`; use it as every step.

    `total_steps` tool-enabled model calls are spread over `turn_count` user turns
    (send `user_turns()`); each turn makes tool calls and ends with a text answer.
    Calls after the plan get short extra turns instead of failing. Usage:
    `ScriptedChatModel([policy] * (total_steps + headroom))`; summary calls (no tools,
    or only `generate_structured_output`) do not count as steps.
    """

    def __init__(self, total_steps: int = 40, *, seed: int = 0, parallel_every: int = 5) -> None:
        _check_int("total_steps", total_steps, 2, "one tool step and one answer")
        _check_int("parallel_every", parallel_every, 1, "a step number")
        self.total_steps = total_steps
        self.seed = seed
        self.parallel_every = parallel_every
        turns = max(min(len(_USER_TURNS), total_steps // 3), -(-total_steps // _MAX_TURN_STEPS), 1)
        base, extra = divmod(total_steps, turns)
        self.turn_lengths = tuple(base + (1 if t < extra else 0) for t in range(turns))
        self.steps_taken = 0
        self.parallel_steps = 0
        self.reads_issued = 0
        self.summaries_written = 0
        self.memories_written = 0
        self.recalls_issued = 0
        self._lessons: set[str] = set()
        self._rng = random.Random(f"policy|{seed}")
        self._turn = 0
        self._turn_step = 0
        self._ids = itertools.count(1)
        self._pending_ids: list[str] = []
        self._reads_in_a_row = 0
        self._findings: list[str] = []

    @property
    def turn_count(self) -> int:
        """How many user turns the plan spans."""
        return len(self.turn_lengths)

    @property
    def done(self) -> bool:
        """Whether all planned steps were taken."""
        return self.steps_taken >= self.total_steps

    def user_turns(self) -> list[str]:
        """The user messages to send, one per planned turn (cycling `demo_user_turns()`)."""
        return list(itertools.islice(itertools.cycle(_USER_TURNS), self.turn_count))

    def __call__(self, call: ModelCall) -> list[ModelBlock]:
        names = call.tool_names
        if not names and _is_memory_request(call.messages):
            self.memories_written += 1
            return [TextBlock(text=self._memory_entries(call.messages))]
        if not names:
            self.summaries_written += 1
            return [TextBlock(text=_summary_markdown(call.messages))]
        if names == ["generate_structured_output"]:
            self.summaries_written += 1
            return [self._structured_output(call)]
        self.steps_taken += 1
        latest = self._latest_results(call.messages)
        self._note_findings(latest)
        length = self.turn_lengths[self._turn] if self._turn < self.turn_count else 3
        if self._turn_step >= length - 1:
            return [TextBlock(text=self._answer())]
        self._turn_step += 1
        if self._recall_now(names):
            self.recalls_issued += 1
            return [
                TextBlock(text="Looking up the first error we hit, before the context was cut."),
                self._call("memory_search", {"query": "tok undeclared"}),
            ]
        parallel = self.steps_taken % self.parallel_every == 0
        calls = (not parallel and self._read_more(latest, names)) or self._agenda_calls(
            names, parallel
        )
        if not calls:
            return [TextBlock(text=self._answer())]
        self._pending_ids = [block.id for block in calls]
        return [
            TextBlock(text=f"Step {self.steps_taken}: calling {', '.join(b.name for b in calls)}."),
            *calls,
        ]

    def _memory_entries(self, messages: list[Msg]) -> str:
        """What the memory summariser keeps: a lesson per new compiler error, else nothing."""
        text = "\n".join(m.get_text_content() or "" for m in messages if m.role != "system")
        errors = {
            re.split(r" \(|;|`", e.lstrip("`"), maxsplit=1)[0] for e in _ERROR_RE.findall(text)
        }
        new = sorted(errors - self._lessons)[:2]
        self._lessons.update(new)
        if not new:
            return "[SILENT]"
        return "\n".join(
            f"- Lesson: `{error}` stays until src/parser.c declares tok; rebuild after fixing it"
            for error in new
        )

    def _recall_now(self, names: list[str]) -> bool:
        """Search the archive once, at the start of the last turn (long after compaction)."""
        last_turn = self._turn == self.turn_count - 1
        return last_turn and self._turn_step == 1 and "memory_search" in names

    def _call(self, name: str, arguments: dict[str, Any]) -> ToolCallBlock:
        return ToolCallBlock(
            id=f"call_demo_{next(self._ids)}",
            name=name,
            input=json.dumps(arguments, ensure_ascii=False),
        )

    def _latest_results(self, messages: list[Msg]) -> list[tuple[str, str]]:
        wanted = set(self._pending_ids)
        return [
            (block.name, _text_of(block.output))
            for msg in messages
            for block in msg.content
            if isinstance(block, ToolResultBlock) and block.id in wanted
        ]

    def _note_findings(self, latest: list[tuple[str, str]]) -> None:
        for name, text in latest:
            tail = text[-4096:]
            found = _ERROR_RE.findall(tail)
            if found:
                self._findings.append(f"{name}: {found[0]}")
            parsed = parse_truncation_notice(text)
            if parsed is not None and parsed[1].file_path:
                self._findings.append(f"{name} output is saved in {parsed[1].file_path}")
        del self._findings[:-6]

    def _read_more(self, latest: list[tuple[str, str]], names: list[str]) -> list[ToolCallBlock]:
        if "read_file" not in names or self._reads_in_a_row >= _MAX_READS_IN_A_ROW:
            return []
        for _, text in latest:
            parsed = parse_truncation_notice(text)
            if parsed is None or not parsed[1].file_path or self._rng.random() < 0.5:
                continue
            notice = parsed[1]
            arguments: dict[str, Any] = {
                "file_path": notice.file_path,
                "start_line": notice.next_line,
            }
            if notice.next_offset > 0:
                arguments["line_offset"] = notice.next_offset
            self.reads_issued += 1
            self._reads_in_a_row += 1
            return [self._call("read_file", arguments)]
        return []

    def _agenda_calls(self, names: list[str], parallel: bool) -> list[ToolCallBlock]:
        agenda = [entry for entry in _TURNS[self._turn % len(_TURNS)][1] if entry[0] in names]
        if not agenda:  # the turn's tools are missing: use any demo tool that is offered
            agenda = [entry for _, entries in _TURNS for entry in entries if entry[0] in names]
        if not agenda:
            return []
        count = 1
        if parallel:
            count = self._rng.choice((2, 3))
            self.parallel_steps += 1
        self._reads_in_a_row = 0
        calls = []
        for k in range(count):
            round_ = (self._turn_step - 1) * 3 + k
            tool, argument, values = agenda[round_ % len(agenda)]
            calls.append(
                self._call(tool, {argument: values[round_ % len(values)].format(i=round_)})
            )
        return calls

    def _answer(self) -> str:
        request = _USER_TURNS[self._turn % len(_USER_TURNS)]
        findings = "; ".join(self._findings[-3:]) or "no errors found"
        self._turn += 1
        self._turn_step = 0
        self._pending_ids = []
        self._findings = []
        return f"Finished: {preview(request, 80)} Findings: {findings}."

    def _structured_output(self, call: ModelCall) -> ToolCallBlock:
        schema = call.tools[0].get("function", {}).get("parameters", {})
        text = _summary_markdown(call.messages)
        values: dict[str, Any] = {}
        for key, spec in schema.get("properties", {}).items():
            kind = spec.get("type") if isinstance(spec, dict) else None
            values[key] = [text] if kind == "array" else text
        return self._call("generate_structured_output", values)


def demo_policy(total_steps: int = 40, *, seed: int = 0, parallel_every: int = 5) -> DemoPolicy:
    """A `DemoPolicy`; pass it as every step of a `ScriptedChatModel`."""
    return DemoPolicy(total_steps, seed=seed, parallel_every=parallel_every)
