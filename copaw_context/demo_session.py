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
from collections.abc import Callable
from typing import Any

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

_WORDS = (
    "context window token budget compaction summary archive offload parser lexer build "
    "cache request response latency retry timeout worker queue shard replica index schema "
    "vendor module config release pipeline deploy metric trace span handler session"
).split()
_ZH_OPENERS = (
    "在高负载时",
    "每次推理之前",
    "默认情况下",
    "发生故障后",
    "上线之前",
    "根据团队约定",
    "在多轮对话中",
)
_ZH_SUBJECTS = (
    "上下文管理模块",
    "压缩器",
    "工具调用结果",
    "运维团队",
    "构建脚本",
    "日志服务",
    "智能体",
    "归档文件",
)
_ZH_VERBS = ("需要", "应该", "可以", "必须", "会", "通常会")
_ZH_ACTIONS = (
    "保留最近的对话",
    "把超长输出写入文件",
    "在触发阈值之前完成压缩",
    "记录每一次工具调用",
    "检查配置是否合法",
    "生成结构化摘要",
    "按行号分段读取文件",
    "拒绝修改第三方目录",
)
_ZH_ENDINGS = (
    "，以免丢失关键信息",
    "，从而减少令牌消耗",
    "，并通知相关人员",
    "",
    "，确保结果可以复现",
)
_ZH_TOPICS = (
    "背景",
    "设计目标",
    "压缩流程",
    "文件归档",
    "故障处理",
    "配置说明",
    "测试方法",
    "发布计划",
)


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
        tools = [FunctionTool(func, is_read_only=True, permission=_allow()) for func in read_only]
        return [*tools, FunctionTool(self.run_build, permission=_allow())]

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
            module = rng.choice(("lexer", "util", "ast", "eval", "io", "vendor/zlib/inflate"))
            line = f"gcc -O2 -Wall -Iinclude -Ivendor/include -c src/{module}.c -o {module}.o"
            if rng.random() < 0.3:
                var = rng.choice(_WORDS)
                line += (
                    f"\nsrc/{module}.c:{rng.randint(10, 900)}:{rng.randint(1, 40)}: warning: "
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
        f'<div class="section" id="s{n}">\n  <div class="inner">\n    <h2>{rng.choice(_WORDS)} {n}</h2>\n'
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


_USER_TURNS = (
    "Our CI is red. Run the build for target `all` and tell me exactly which line fails. "
    "Never modify vendor/ files.",
    f"Fetch {BIG_PAGE_URL} and the guide pages, then tell me which config keys control the cache.",
    "请阅读《部署指南》和《上下文压缩设计》，用中文总结关键步骤，不要遗漏注意事项。",
    "Search the logs for `timeout` and `retry`; group the errors by service.",
    "List src/ and vendor/ so we know what is ours. Keep answers short, bullet points only.",
    "Rebuild `parser` and compare the error with the first build. Do not touch Makefile.",
    "Fetch the release notes page and check whether the parser change is mentioned.",
    "请搜索日志中的 `archiver` 错误，并说明是否与压缩有关。回答请使用中文。",
    "Read the doc `运维手册` and list every step that needs manual approval.",
    "Search the logs for `shard` failures in the worker service since the 20th.",
    "Run the `test` target and report only failures; never paste whole logs into the answer.",
    "Wrap up: summarise everything we found today and propose the fix for src/parser.c.",
)

# Per user turn: the tool calls it cycles through (tool name, arguments for round i).
_Agenda = tuple[tuple[str, Callable[[int], dict[str, Any]]], ...]
_AGENDAS: tuple[_Agenda, ...] = (
    (("run_build", lambda i: {"target": "all"}), ("list_dir", lambda i: {"path": "src"})),
    (
        (
            "fetch_page",
            lambda i: {
                "url": BIG_PAGE_URL if i == 0 else f"https://docs.example.com/guide/p{i}.html"
            },
        ),
    ),
    (("read_doc", lambda i: {"name": ("部署指南", "上下文压缩设计", "配置说明")[i % 3]}),),
    (("search_logs", lambda i: {"query": ("timeout", "retry")[i % 2]}),),
    (("list_dir", lambda i: {"path": ("src", "vendor", "docs")[i % 3]}),),
    (("run_build", lambda i: {"target": "parser"}), ("read_doc", lambda i: {"name": "构建说明"})),
    (("fetch_page", lambda i: {"url": f"https://docs.example.com/releases/v{i}.html"}),),
    (
        ("search_logs", lambda i: {"query": "archiver"}),
        ("read_doc", lambda i: {"name": "归档设计"}),
    ),
    (("read_doc", lambda i: {"name": "运维手册"}),),
    (("search_logs", lambda i: {"query": f"shard-{i}"}),),
    (("run_build", lambda i: {"target": "test"}), ("search_logs", lambda i: {"query": "test"})),
    (
        ("run_build", lambda i: {"target": "all"}),
        ("fetch_page", lambda i: {"url": f"https://docs.example.com/fix/{i}.html"}),
    ),
)


def demo_user_turns() -> list[str]:
    """Realistic user requests, mixing constraints, English and Chinese."""
    return list(_USER_TURNS)


def _text_of(output: str | list[Any]) -> str:
    if isinstance(output, str):
        return output
    return "\n".join(block.text for block in output if isinstance(block, TextBlock))


def _last_user_text(messages: list[Msg]) -> str:
    for msg in reversed(messages):
        if msg.role == "user" and msg.get_text_content():
            return msg.get_text_content() or ""
    return ""


_CONSTRAINT_RE = re.compile(
    r"[^.!?\n。！？]*(?:never|always|must|do not|don't|only|不要|必须|禁止|请使用)[^.!?\n。！？]*",
    re.I,
)
_ERROR_RE = re.compile(r"^\S+:\d+:\d+: error: .*$|^make: \*\*\* .*$", re.M)
_PATH_RE = re.compile(r"(?<![\w/])(?:[\w.-]+/)+[\w.-]+\.\w+")


def _bullets(items: list[str], empty: str) -> str:
    return "\n".join(f"- {item}" for item in items) or f"- {empty}"


def _summary_sections(text: str) -> dict[str, str]:
    """A six-section summary built from `text` by simple extraction."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    goal = lines[0][:200] if lines else "Continue the user's current request."
    constraints = list(dict.fromkeys(m.strip() for m in _CONSTRAINT_RE.findall(text) if m.strip()))[
        :5
    ]
    errors = list(dict.fromkeys(_ERROR_RE.findall(text)))[:5]
    paths = list(dict.fromkeys(_PATH_RE.findall(text)))[:8]
    return {
        "goal": goal,
        "constraints": _bullets(constraints, "None stated."),
        "done": f"- [x] Reviewed {len(lines)} lines of conversation",
        "in_progress": f"- [ ] {goal}",
        "blocked": _bullets(errors, "Nothing blocked."),
        "decisions": "- Read long tool outputs from their saved files instead of re-running tools",
        "next": "1. Continue the current request\n2. Report findings to the user",
        "critical": _bullets([*errors, *paths], "No paths or errors recorded."),
    }


def _summary_markdown(text: str) -> str:
    s = _summary_sections(text)
    return (
        f"## Goal\n{s['goal']}\n\n## Constraints & Preferences\n{s['constraints']}\n\n"
        f"## Progress\n### Done\n{s['done']}\n### In Progress\n{s['in_progress']}\n"
        f"### Blocked\n{s['blocked']}\n\n## Key Decisions\n{s['decisions']}\n\n"
        f"## Next Steps\n{s['next']}\n\n## Critical Context\n{s['critical']}\n"
    )


class DemoPolicy:
    """A scripted assistant for `ScriptedChatModel`; use it as every step.

    `total_steps` tool-enabled model calls are spread over `turn_count` user turns
    (see `user_turns()`); each turn makes tool calls and ends with a text answer.
    Calls after the plan get short extra turns instead of failing.
    """

    def __init__(self, total_steps: int = 40, *, seed: int = 0, parallel_every: int = 5) -> None:
        if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 2:
            raise ValueError(
                f"total_steps must be an int >= 2 (one tool step and one answer), got {total_steps!r}"
            )
        if (
            isinstance(parallel_every, bool)
            or not isinstance(parallel_every, int)
            or parallel_every < 1
        ):
            raise ValueError(f"parallel_every must be an int >= 1, got {parallel_every!r}")
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
            return [TextBlock(text=_summary_markdown(_last_user_text(call.messages)))]
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
        calls = self._read_more(latest, names) or self._agenda_calls(names)
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
        if "read_file" not in names:
            return []
        for _, text in latest:
            parsed = parse_truncation_notice(text)
            if parsed is None or not parsed[1].file_path or self._rng.random() < 0.4:
                continue
            notice = parsed[1]
            arguments: dict[str, Any] = {
                "file_path": notice.file_path,
                "start_line": notice.next_line,
            }
            if notice.next_offset > 0:
                arguments["line_offset"] = notice.next_offset
            self.reads_issued += 1
            return [self._call("read_file", arguments)]
        return []

    def _agenda_calls(self, names: list[str]) -> list[ToolCallBlock]:
        agenda = [
            (tool, make) for tool, make in _AGENDAS[self._turn % len(_AGENDAS)] if tool in names
        ]
        if not agenda:
            agenda = [(tool, make) for tool, make in itertools.chain(*_AGENDAS) if tool in names]
        if not agenda:
            return []
        count = 1
        if self.steps_taken % self.parallel_every == 0:
            count = self._rng.choice((2, 3))
            self.parallel_steps += 1
        round_ = self._turn_step - 1
        return [
            self._call(
                agenda[(round_ + k) % len(agenda)][0],
                agenda[(round_ + k) % len(agenda)][1](round_ * 3 + k),
            )
            for k in range(count)
        ]

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
        text = _summary_markdown(_last_user_text(call.messages))
        values: dict[str, Any] = {}
        for key, spec in schema.get("properties", {}).items():
            kind = spec.get("type") if isinstance(spec, dict) else None
            values[key] = [text] if kind == "array" else text
        return self._call("generate_structured_output", values)


def demo_policy(total_steps: int = 40, *, seed: int = 0, parallel_every: int = 5) -> DemoPolicy:
    """A `DemoPolicy`; pass it as every step of a `ScriptedChatModel`."""
    return DemoPolicy(total_steps, seed=seed, parallel_every=parallel_every)
