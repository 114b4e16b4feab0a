"""Error lines of tool output and pasted logs, recognised by toolchain family and ranked.

Each line that reports a failure gets a rank: :data:`DECISIVE` for the error itself (the
exception line that ends a Python traceback, pytest's ``E`` lines, ``error TS2345: ...``,
``--- FAIL: TestAdd``, ``add_test.go:12: got 6, want 5``, a jest-axe violation, a linker's
``undefined reference``, ``Error from server (NotFound)``, ...), :data:`OTHER` for a line that
only mentions an error, and :data:`WRAPPER` for what a tool prints around a failure (``npm ERR!``,
``make: *** [all] Error 2``, ``collect2: error: ld returned 1``, a test tally, an exit code).
Wrapper lines are kept too, but they are the first to go when there are too many lines and
are never picked as the error of a failed tool call, so they never stand in for the error
itself. English and Chinese output are both recognised.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from copaw_context.core.summary.error_rules import (
    DECISIVE_RULES,
    EXIT_CODE_RE,
    EXIT_CODE_RULES,
    FAILURE_RULES,
    OTHER_RULES,
    WRAPPER_RULES,
)

__all__ = [
    "DECISIVE",
    "EXIT_CODE_RE",
    "OTHER",
    "WRAPPER",
    "ErrorLine",
    "error_lines",
    "forget_lines",
    "keep_newest",
    "keep_newest_ranked",
    "most_telling",
    "pasted_error_lines",
    "rank_line",
    "scan_errors",
    "shows_failure",
]

WRAPPER, OTHER, DECISIVE = 0, 1, 2
MAX_LINE_CHARS = 500  # longer lines are data (minified JSON, a log dump), not error lines

# Decoration in front of the text of a line: Docker BuildKit's "#8 1.234", Terraform's box
# "│ ", Maven's "[ERROR] ", a JUnit console's "=> ".
_PREFIX_RE = re.compile(r"^(?:#\d+ (?:\d+\.\d+ )?|[│|]\s?|\[(?:ERROR|FATAL)\]\s*|=>\s*)")
# An exception or error name at the start of a line (after Java's "Caused by: " or "原因: "),
# with its message: Python, Java, Node, pydantic, SQLAlchemy, Terraform's bare "Error: ...".
_NAMED_RE = re.compile(
    r"^(?:Caused by:\s*|原因[:：]\s*|Exception in thread \"[^\"]*\"\s*|Uncaught\s+)?"
    r"(?:[A-Za-z_][\w$]*+\.)*+\w*(?:Error|Exception|Failure|Failed|Violation|Interrupt|Exit)"
    r"(?: \[\w+\])?(?:: \S.*| at \S+)?$"
)
# What counts as pasted error output inside a user's message: only structural markers, so a
# request that merely mentions errors ("search the logs for 错误") is not taken for one.
_PASTED_RE = re.compile(
    r"Traceback \(most recent call last\)|\b\w+(?:Error|Exception): \S"
    r"|(?i:\berror(?:\[\w+\])?:\s*\S)|\bfatal:|\bpanic:|^E\s{2,}\S|\*\*\*.*\bError \d+\b"
    r"|\berror TS\d+:|^\s*--- FAIL: |\.go:\d+(?::\d+)?: \S|undefined reference to"
    r"|^Error from server|^thread '[^']*' panicked at"
)
_ASSERTED_RE = re.compile(r"\s*(?:(?:Expected|Received)(?: \w+)?|left|right):\s*\S")
_FRAME_RE = re.compile(r"^\s+\S|^\s*$")
_EXCEPTION_LINE_RE = re.compile(r"(?:[A-Za-z_]\w*+\.)*+[A-Za-z_]\w*+(?::|$)")
# A line can be an error line only if it holds one of these (lower case) or starts with one
# of _LEADS: a check per distinct line spares the full patterns on most lines.
_KEYWORDS = (
    *("err", "fail", "fatal", "panic", "exception", "traceback", "denied", "refused"),
    *("not found", "no such", "not permitted", "segmentation", "core dumped", "cannot"),
    *("killed", "undefined", "multiple definition", "no rule", "***", "backoff", "invalid"),
    *("oomkilled", "exit", "return code", "returncode", "violation", "interrupt", "assert"),
    *("expect", "received", "left:", "right:", "tests run", "elifecycle", "collect2"),
    *("linker", "generated", "terminated", "ninja", "aborting", "did not complete"),
    *("●", "×", "✕", "✗", "›", "✖", "[type=", ')"', ".go:", ".tf line"),
    *("错误", "失败", "异常", "未找到", "没有", "权限", "拒绝", "不允许", "无法", "未定义"),
    *("找不到", "退出", "返回码", "断言"),
)


@dataclass(frozen=True)
class ErrorLine:
    """An error line as it appeared (stripped) and its rank."""

    text: str
    rank: int


@functools.lru_cache(maxsize=1 << 16)
def rank_line(line: str) -> int | None:
    """The rank of ``line`` as an error line (``None``: not one). Remembered per line: logs
    repeat their lines (a warning per file, a retry's output), and a line's rank is its own."""
    inner = _PREFIX_RE.sub("", line.strip(), count=1).strip()
    lower = inner.lower()
    if WRAPPER_RULES.search(inner, lower) or EXIT_CODE_RULES.search(inner, lower):
        return WRAPPER
    if _NAMED_RE.match(inner) or DECISIVE_RULES.search(inner, lower):
        return DECISIVE
    if OTHER_RULES.search(inner, lower) or (inner != line and OTHER_RULES.search(line)):
        return OTHER
    return None


class _Traceback:
    """Where a Python traceback is: its exception line is the first one after the frames."""

    def __init__(self) -> None:
        self.inside = False
        self.framed = False

    def exception_line(self, line: str) -> bool:
        if line.startswith("Traceback (most recent call last)"):
            self.inside, self.framed = True, False
            return False
        if not self.inside:
            return False
        if _FRAME_RE.match(line):
            self.framed = self.framed or line.lstrip().startswith("File ")
            return False
        self.inside = False
        return self.framed and bool(_EXCEPTION_LINE_RE.match(line))


_CANDIDATE, _LOWER_GROWS = 1, 2
_LEADS = ("E  ", "e: ", "Traceback")  # _LEAD_RE, at the start of one line


def _line_kind(line: str) -> int:
    """Whether ``line`` holds a keyword or a lead (``_CANDIDATE``) and whether its lower
    case is longer (``_LOWER_GROWS``). Remembered per line of at most ``MAX_LINE_CHARS``
    (like :func:`rank_line`: a log's lines repeat, and the answer is the line's own, as no
    keyword holds a newline); a longer line is checked each time, never kept."""
    return _short_line_kind(line) if len(line) <= MAX_LINE_CHARS else _kind_of(line)


def _kind_of(line: str) -> int:
    lower = line.lower()
    kind = _LOWER_GROWS if len(lower) != len(line) else 0
    if line.startswith(_LEADS):
        return kind | _CANDIDATE
    for word in _KEYWORDS:
        if word in lower:
            return kind | _CANDIDATE
    return kind


_short_line_kind = functools.lru_cache(maxsize=1 << 16)(_kind_of)


def _candidates(lines: Sequence[str]) -> list[int]:
    """Rows of ``lines`` that hold a keyword or a lead, in order: every row when a line's
    lower case is longer (a scan of the text's lower case could not place its words)."""
    kinds = list(map(_line_kind, lines))
    if any(kind & _LOWER_GROWS for kind in kinds):
        return list(range(len(lines)))
    return [row for row, kind in enumerate(kinds) if kind]


def _exception_rows(lines: Sequence[str], tracebacks: Iterable[int]) -> set[int]:
    """The exception line that ends each Python traceback starting at ``tracebacks``."""
    rows: set[int] = set()
    for start in tracebacks:
        traceback = _Traceback()
        traceback.exception_line(lines[start])
        for row in range(start + 1, len(lines)):
            found = traceback.exception_line(lines[row])
            if not traceback.inside:
                if found:
                    rows.add(row)
                break
    return rows


def _line_error(line: str) -> tuple[ErrorLine | None, bool]:
    """A candidate line as an error line on its own (None: not one, or too long), and
    whether it is a failed assertion's value (an error line only inside a failure block).
    Remembered per line of at most ``MAX_LINE_CHARS``, like :func:`rank_line`."""
    return (None, False) if len(line) > MAX_LINE_CHARS else _short_line_error(line)


@functools.lru_cache(maxsize=1 << 16)
def _short_line_error(line: str) -> tuple[ErrorLine | None, bool]:
    rank = rank_line(line)
    if rank is None:
        return None, _ASSERTED_RE.match(line) is not None
    return ErrorLine(line.strip(), rank), False


_PANIC_HEAD_RE = re.compile(r"^thread '[^']*' panicked at \S+:\d+:\d+:$")


def _panic_messages(lines: Sequence[str], rows: Iterable[int]) -> set[int]:
    """The message line under each Rust panic header (``thread 'x' panicked at f.rs:1:2:``)."""
    return {
        row + 1
        for row in rows
        if _PANIC_HEAD_RE.match(lines[row]) and row + 1 < len(lines) and lines[row + 1].strip()
    }


def scan_errors(text: str) -> list[ErrorLine]:
    """Every error line of ``text`` in order, with its rank."""
    lines = text.split("\n")
    rows = _candidates(lines)
    exceptions: set[int] = set()
    if "Traceback (most recent call last)" in text:
        heads = [r for r in rows if lines[r].startswith("Traceback (most recent call last)")]
        exceptions = _exception_rows(lines, heads)
    if "panicked at" in text:  # Rust >= 1.73 prints the panic's message on the next line
        exceptions |= _panic_messages(lines, rows)
    known = list(map(_line_error, map(lines.__getitem__, rows)))
    if not exceptions and not any(asserted for _, asserted in known):
        return [error for error, _ in known if error is not None]  # each line on its own
    found: list[ErrorLine] = []
    in_failure = False  # a test failure block: its Expected/Received lines are the error
    for row in sorted(exceptions.union(rows)):
        line = lines[row]
        if len(line) > MAX_LINE_CHARS:
            continue
        rank = DECISIVE if row in exceptions else rank_line(line)
        if rank is None and in_failure and _ASSERTED_RE.match(line):
            rank = OTHER  # the values of a failed assertion
        if rank is not None:
            in_failure = in_failure or rank == DECISIVE
            found.append(ErrorLine(line.strip(), rank))
    return found


def error_lines(text: str) -> list[str]:
    """The error lines of a tool's output, as they appeared (stripped)."""
    return [item.text for item in scan_errors(text)]


def pasted_error_lines(text: str) -> list[str]:
    """The error lines a user pasted into a message: structural markers only."""
    return [
        line.strip()
        for line in text.split("\n")
        if len(line) <= MAX_LINE_CHARS and _PASTED_RE.search(line)
    ]


def shows_failure(lines: Iterable[str]) -> bool:
    """Whether error lines say that the command itself failed."""
    return any(_says_failed(x) for x in lines)


@functools.lru_cache(maxsize=1 << 16)
def _says_failed(line: str) -> bool:
    """Whether one error line says that the command failed (remembered, as :func:`rank_line`)."""
    return EXIT_CODE_RULES.search(line) or FAILURE_RULES.search(line)


def most_telling(found: Sequence[ErrorLine]) -> str:
    """The last decisive line, else the last other error line, else the last line."""
    decisive = [item.text for item in found if item.rank == DECISIVE]
    other = [item.text for item in found if item.rank == OTHER]
    return (decisive or other or [item.text for item in found])[-1]


def keep_newest(lines: Sequence[str], limit: int) -> tuple[list[str], int]:
    """At most ``limit`` of ``lines`` (in order) and how many were left out: wrappers and
    tallies go first, then the oldest lines."""
    kept, omitted = keep_newest_ranked(
        [ErrorLine(x, rank_line(x) or WRAPPER) for x in lines], limit
    )
    return [item.text for item in kept], omitted


def keep_newest_ranked(found: Sequence[ErrorLine], limit: int) -> tuple[list[ErrorLine], int]:
    """:func:`keep_newest` for lines already ranked."""
    if len(found) <= limit:
        return list(found), 0
    order = sorted(
        range(len(found)),
        key=lambda i: (found[i].rank != WRAPPER, i),
        reverse=True,
    )
    kept = sorted(order[:limit])
    return [found[i] for i in kept], len(found) - len(kept)


def forget_lines() -> None:
    """Forget the lines :func:`rank_line`, :func:`shows_failure` and the keyword check
    remember."""
    rank_line.cache_clear()
    _says_failed.cache_clear()
    _short_line_kind.cache_clear()
    _short_line_error.cache_clear()
