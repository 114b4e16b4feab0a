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

BIG_PAGE_URL = "https://docs.example.com/reference/full.html"
BIG_PAGE_BYTES = 300 * 1024
BUILD_ERROR_LINE = "src/parser.c:412:17: error: 'tok' undeclared (first use in this function)"
MAKE_ERROR_LINE = "make: *** [Makefile:23: parser.o] Error 1"
_MAX_TURN_STEPS = 40  # stays below the agent's default max_iters (50)
_MAX_READS_IN_A_ROW = 2

# fmt: off
_WORDS = (
    "context", "window", "token", "budget", "compaction", "summary", "archive", "offload",
    "parser", "lexer", "build", "cache", "request", "response", "latency", "retry", "timeout",
    "worker", "queue", "shard", "replica", "index", "schema", "vendor", "module", "config",
    "release", "pipeline", "deploy", "metric", "trace", "span", "handler", "session",
)
_BUILD_SOURCES = ("src/lexer", "src/util", "src/ast", "src/eval", "src/io", "vendor/zlib/inflate")
_ZH_OPENERS = (
    "在高负载时", "每次推理之前", "默认情况下", "发生故障后", "上线之前", "根据团队约定",
    "在多轮对话中",
)
_ZH_SUBJECTS = (
    "上下文管理模块", "压缩器", "工具调用结果", "运维团队", "构建脚本", "日志服务", "智能体",
    "归档文件",
)
_CONSTRAINT_WORDS = ("never", "always", "must", "do not", "don't", "only", "不要", "必须", "禁止")
_INSTRUCTION_MARKERS = ("structured summary", "continuation summary", "summary from the conv")
_ZH_VERBS = ("需要", "应该", "可以", "必须", "会", "通常会")
_ZH_ACTIONS = (
    "保留最近的对话", "把超长输出写入文件", "在触发阈值之前完成压缩", "记录每一次工具调用",
    "检查配置是否合法", "生成结构化摘要", "按行号分段读取文件", "拒绝修改第三方目录",
)
_ZH_ENDINGS = (
    "，以免丢失关键信息", "，从而减少令牌消耗", "，并通知相关人员", "", "，确保结果可以复现",
)
_ZH_TOPICS = (
    "背景", "设计目标", "压缩流程", "文件归档", "故障处理", "配置说明", "测试方法", "发布计划",
)
# fmt: on


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
        rng = self._rng("page", url)
        size = BIG_PAGE_BYTES if url == BIG_PAGE_URL else rng.randint(1024, 240 * 1024)
        head = (
            f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<title>{url}</title>\n'
            '<script>window.__cfg = {"theme": "dark", "lazy": true};</script>\n</head>\n<body>\n'
        )
        foot = "</body>\n</html>\n"
        parts, used = [head], len(head) + len(foot) + 16
        for n in itertools.count(1):
            section = _html_section(rng, n)
            if used + len(section) > size:
                break
            parts.append(section)
            used += len(section)
        pad = size - sum(len(p) for p in parts) - len(foot)
        parts.append("<!--" + "~" * (pad - 8) + "-->\n" + foot)
        return "".join(parts)

    def run_build(self, target: str) -> str:
        """Run `make` for a build target and return the build log.

        Args:
            target (`str`):
                The make target, e.g. "all" or "parser".
        """
        rng = self._rng("build", target)
        size = rng.randint(6 * 1024, 118 * 1024)
        tail = (
            "gcc -O2 -Wall -Iinclude -Ivendor/include -c src/parser.c -o parser.o\n"
            "src/parser.c: In function 'parse_expression':\n"
            f"{BUILD_ERROR_LINE}\n"
            "  412 |     if (tok->kind == TOK_EOF)\n"
            "      |         ^~~\n"
            "src/parser.c:412:17: note: each undeclared identifier is reported only once "
            "for each function it appears in\n"
            f"{MAKE_ERROR_LINE}\n"
        )
        lines = [f"make -C build {target}", "make[1]: Entering directory '/work/app/build'"]
        used = sum(len(line) + 1 for line in lines) + len(tail)
        while True:
            source = rng.choice(_BUILD_SOURCES)
            obj = source.rsplit("/", 1)[-1]
            line = f"gcc -O2 -Wall -Iinclude -Ivendor/include -c {source}.c -o {obj}.o"
            if rng.random() < 0.3:
                var = rng.choice(_WORDS)
                line += (
                    f"\n{source}.c:{rng.randint(10, 900)}:{rng.randint(1, 40)}: warning: "
                    f"unused variable '{var}' [-Wunused-variable]"
                )
            if used + len(line) + 1 > size:
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines) + "\n" + tail

    def read_doc(self, name: str) -> str:
        """Read an internal design document (in Chinese) by name.

        Args:
            name (`str`):
                The document name, e.g. "部署指南".
        """
        rng = self._rng("doc", name)
        size = rng.randint(21 * 1024, 78 * 1024)
        parts, used = [f"# {name}\n\n"], len(f"# {name}\n\n".encode())
        for n in itertools.count(1):
            sentences = "".join(_zh_sentence(rng) for _ in range(rng.randint(4, 8)))
            paragraph = f"## 第{n}节 {rng.choice(_ZH_TOPICS)}\n\n{sentences}\n\n"
            if used + len(paragraph.encode()) > size:
                break
            parts.append(paragraph)
            used += len(paragraph.encode())
        return "".join(parts)

    def list_dir(self, path: str) -> str:
        """List the entries of a directory in the project.

        Args:
            path (`str`):
                The directory path, relative to the project root.
        """
        rng = self._rng("dir", path)
        entries = ["drwxr-xr-x  src/", "drwxr-xr-x  vendor/", "drwxr-xr-x  docs/"]
        for name in rng.sample(_WORDS, 8):
            entries.append(f"-rw-r--r--  {rng.randint(100, 90000):>6}  {name}.c")
        return f"{path}:\n" + "\n".join([*entries, "-rw-r--r--     812  Makefile"])

    def search_logs(self, query: str) -> str:
        """Search the service logs; returns the hits as one line of JSON.

        Args:
            query (`str`):
                The search query, e.g. "timeout".
        """
        rng = self._rng("logs", query)
        size = rng.randint(58 * 1024, 62 * 1024)
        hits: list[dict[str, Any]] = []
        used = 80 + len(query)
        while used < size:
            hit = {
                "ts": f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
                f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
                "level": rng.choice(("INFO", "WARN", "ERROR")),
                "service": rng.choice(("gateway", "worker", "scheduler", "archiver")),
                "msg": f"{query} " + " ".join(rng.choices(_WORDS, k=rng.randint(4, 12))),
                "trace_id": f"{rng.getrandbits(64):016x}",
            }
            hits.append(hit)
            used += len(json.dumps(hit, separators=(",", ":"))) + 1
        result = {"query": query, "took_ms": rng.randint(5, 900), "total": len(hits), "hits": hits}
        return json.dumps(result, separators=(",", ":"), ensure_ascii=False)


def _html_section(rng: random.Random, n: int) -> str:
    words = " ".join(rng.choices(_WORDS, k=rng.randint(20, 60)))
    rows = "".join(
        "      <tr>"
        + "".join(f"<td>{rng.choice(_WORDS)}-{rng.randint(0, 999)}</td>" for _ in range(4))
        + "</tr>\n"
        for _ in range(rng.randint(2, 8))
    )
    data = json.dumps({"id": n, "tags": rng.sample(_WORDS, 3)})
    return (
        f'<div class="section" id="s{n}">\n  <div class="inner">\n'
        f"    <h2>{rng.choice(_WORDS)} {n}</h2>\n"
        f"    <p>{words}</p>\n    <table>\n{rows}    </table>\n"
        f"    <script>window.__data_{n} = {data};</script>\n  </div>\n</div>\n"
    )


def _zh_sentence(rng: random.Random) -> str:
    return (
        f"{rng.choice(_ZH_OPENERS)}，{rng.choice(_ZH_SUBJECTS)}{rng.choice(_ZH_VERBS)}"
        f"{rng.choice(_ZH_ACTIONS)}{rng.choice(_ZH_ENDINGS)}。"
    )


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
