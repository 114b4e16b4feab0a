"""A realistic, fully offline long agent session for the demo and long-run tests.

`DemoTools` produces deterministic large tool outputs (HTML pages up to 300 KB, build
logs ending in a compiler error, Chinese documents, a single-line JSON log search).
`DemoPolicy` is a `ScriptedChatModel` step that plays the assistant: it calls tools
(several at once every few steps), follows truncation notices with `read_file`, ends
each user turn with a text answer, and writes a structured summary when called by a
tool-less compactor. It only looks at its own counters and the latest tool results,
so it works on any context shape (after compaction, old messages are gone).
"""

from __future__ import annotations

import itertools
import json
import random
import re
from dataclasses import dataclass
from typing import Any, cast

from agentscope.message import Msg, TextBlock, ToolCallBlock, ToolResultBlock
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool

from copaw_context._demo_content import (
    BIG_PAGE_BYTES,
    BIG_PAGE_URL,
    BUILD_ERROR_LINE,
    MAKE_ERROR_LINE,
    build_log,
    chinese_doc,
    dir_listing,
    html_page,
    log_search,
)
from copaw_context.core.truncation import parse_truncation_notice
from copaw_context.testing import ModelBlock, ModelCall

__all__ = [
    "BIG_PAGE_BYTES",
    "BIG_PAGE_URL",
    "BUILD_ERROR_LINE",
    "MAKE_ERROR_LINE",
    "DemoPolicy",
    "DemoTools",
    "demo_policy",
    "demo_user_turns",
    "make_demo_tools",
]

_MAX_TURN_STEPS = 40  # stays below the agent's default max_iters (50)
_MAX_READS_IN_A_ROW = 2
_CONSTRAINT_WORDS = ("never", "always", "must", "do not", "don't", "only", "不要", "必须", "禁止")
_INSTRUCTION_MARKERS = ("structured summary", "continuation summary", "summary from the conv")


def _allow() -> PermissionDecision:
    return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="demo tool")


@dataclass(frozen=True)
class DemoTools:
    """Deterministic demo tools; the same seed and argument give the same output."""

    seed: int = 0

    def _rng(self, *parts: str) -> random.Random:
        return random.Random("|".join((str(self.seed), *parts)))

    @property
    def tools(self) -> list[FunctionTool]:
        """The tools as `FunctionTool`s with ALLOW permission."""
        read_only = (self.fetch_page, self.read_doc, self.list_dir, self.search_logs)
        # cast: FunctionTool accepts plain str-returning functions, its annotation does not.
        tools = [
            FunctionTool(cast(Any, func), is_read_only=True, permission=_allow())
            for func in read_only
        ]
        return [*tools, FunctionTool(cast(Any, self.run_build), permission=_allow())]

    def fetch_page(self, url: str) -> str:
        """Fetch a web page and return its raw HTML.

        Args:
            url (`str`):
                The absolute URL of the page.
        """
        return html_page(self._rng("page", url), url)

    def run_build(self, target: str) -> str:
        """Run `make` for a build target and return the build log.

        Args:
            target (`str`):
                The make target, e.g. "all" or "parser".
        """
        return build_log(self._rng("build", target), target)

    def read_doc(self, name: str) -> str:
        """Read an internal design document (in Chinese) by name.

        Args:
            name (`str`):
                The document name, e.g. "部署指南".
        """
        return chinese_doc(self._rng("doc", name), name)

    def list_dir(self, path: str) -> str:
        """List the entries of a directory in the project.

        Args:
            path (`str`):
                The directory path, relative to the project root.
        """
        return dir_listing(self._rng("dir", path), path)

    def search_logs(self, query: str) -> str:
        """Search the service logs; returns the hits as one line of JSON.

        Args:
            query (`str`):
                The search query, e.g. "timeout".
        """
        return log_search(self._rng("logs", query), query)


def make_demo_tools(seed: int = 0) -> list[FunctionTool]:
    """The demo tools for `seed`, each a `FunctionTool` with ALLOW permission."""
    return DemoTools(seed).tools


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
        return f"Finished: {request[:80]} Findings: {findings}."

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
