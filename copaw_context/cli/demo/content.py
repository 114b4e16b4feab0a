"""Deterministic large tool outputs for the demo session (no AgentScope needed).

Each generator takes a seeded ``random.Random``, so the same seed and argument always
give the same text: HTML pages, build logs ending in a compiler error, Chinese documents,
directory listings and single-line JSON log searches.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

__all__ = [
    "BIG_PAGE_BYTES",
    "BIG_PAGE_URL",
    "BUILD_ERROR_LINE",
    "MAKE_ERROR_LINE",
    "build_log",
    "chinese_doc",
    "dir_listing",
    "html_page",
    "log_search",
]

BIG_PAGE_URL = "https://docs.example.com/reference/full.html"
BIG_PAGE_BYTES = 300 * 1024
BUILD_ERROR_LINE = "src/parser.c:412:17: error: 'tok' undeclared (first use in this function)"
MAKE_ERROR_LINE = "make: *** [Makefile:23: parser.o] Error 1"

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


def html_page(rng: random.Random, url: str) -> str:
    """Raw HTML for ``url``: ``BIG_PAGE_BYTES`` for ``BIG_PAGE_URL``, else 1-240 KB."""
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


def build_log(rng: random.Random, target: str) -> str:
    """A 6-118 KB ``make`` log for ``target`` that ends in ``BUILD_ERROR_LINE``."""
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


def chinese_doc(rng: random.Random, name: str) -> str:
    """A 21-78 KB Chinese Markdown document titled ``name``."""
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


def dir_listing(rng: random.Random, path: str) -> str:
    """An ``ls -l``-like listing of ``path``."""
    entries = ["drwxr-xr-x  src/", "drwxr-xr-x  vendor/", "drwxr-xr-x  docs/"]
    for name in rng.sample(_WORDS, 8):
        entries.append(f"-rw-r--r--  {rng.randint(100, 90000):>6}  {name}.c")
    return f"{path}:\n" + "\n".join([*entries, "-rw-r--r--     812  Makefile"])


def log_search(rng: random.Random, query: str) -> str:
    """About 60 KB of log hits for ``query`` as one line of JSON."""
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
