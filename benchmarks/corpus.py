"""Seeded text for the benchmarks: log-like lines, a share of them Chinese."""

from __future__ import annotations

import json
import random

__all__ = ["one_line_json", "tool_output"]

_WORDS = [
    "build",
    "step",
    "cache",
    "miss",
    "compile",
    "link",
    "test",
    "pass",
    "fail",
    "retry",
    "worker",
    "queue",
    "request",
    "response",
    "latency",
    "bytes",
    "module",
    "import",
    "error",
    "warning",
    "info",
    "debug",
    "config",
    "value",
]
_HANZI = (
    "构建步骤缓存编译链接测试通过失败重试队列请求响应延迟模块导入错误警告信息调试配置数值文件目录"
)
_BLOCK_BYTES = 1 << 20


def _line(rng: random.Random, number: int, chinese_ratio: float) -> str:
    if rng.random() < chinese_ratio:
        body = "".join(rng.choice(_HANZI) for _ in range(rng.randint(8, 40)))
    else:
        body = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 16)))
    level = rng.choice(("INFO", "DEBUG", "WARN", "ERROR"))
    return f"{number:07d} {level} [{rng.randint(1, 64):02d}] {body}"


def _lines(nbytes: int, rng: random.Random, chinese_ratio: float) -> str:
    lines: list[str] = []
    size = 0
    while size < nbytes:
        line = _line(rng, len(lines) + 1, chinese_ratio)
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    return "\n".join(lines)


def tool_output(nbytes: int, *, seed: int = 0, chinese_ratio: float = 0.3) -> str:
    """About ``nbytes`` UTF-8 bytes of log lines (``chinese_ratio`` of them in Chinese).

    Outputs over 1 MB repeat a seeded 1 MB block (building 100 MB line by line is slow).
    """
    rng = random.Random(seed)
    if nbytes <= _BLOCK_BYTES:
        return _cut(_lines(nbytes, rng, chinese_ratio), nbytes)
    block = _lines(_BLOCK_BYTES, rng, chinese_ratio) + "\n"
    copies = -(-nbytes // len(block.encode("utf-8")))
    return _cut(block * copies, nbytes)


def one_line_json(nbytes: int, *, seed: int = 0) -> str:
    """About ``nbytes`` of minified JSON on a single line (no newline at all)."""
    rng = random.Random(seed)
    items = [{"id": i, "name": f"item-{i}", "tags": rng.sample(_WORDS, 3)} for i in range(2000)]
    block = json.dumps(items, separators=(",", ":"))
    copies = -(-nbytes // len(block))
    return (block * copies)[:nbytes]


def _cut(text: str, nbytes: int) -> str:
    """``text`` cut to at most ``nbytes`` UTF-8 bytes (ASCII-rich, so a char prefix is close)."""
    data = text.encode("utf-8")[:nbytes]
    return data.decode("utf-8", errors="ignore")
