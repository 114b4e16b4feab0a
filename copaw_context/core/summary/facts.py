"""Facts taken verbatim from a transcript: requests, constraints, errors, paths, outcomes.

The extractive summary is built from them, and the carry-over copies the constraints,
error lines and file paths into any summary word for word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from copaw_context.core.summary.markdown import BULLET_PREFIX_RE
from copaw_context.core.summary.message import split_summary_message
from copaw_context.core.transcript import TranscriptMessage

__all__ = [
    "MAX_ERROR_LINES",
    "MAX_REQUEST_CHARS",
    "ExtractedFacts",
    "cut",
    "extract_facts",
    "first_line",
    "unique",
    "user_texts",
]

MAX_REQUEST_CHARS = 2000
MAX_ERROR_LINES = 40
_MAX_ERROR_LINE_CHARS = 500
_MAX_SENTENCE_CHARS = 600
_MAX_DECISIONS = 10

_CONSTRAINT_RE = re.compile(
    r"\b(?:must|mustn't|never|don't|don’t|do not|always|only|prefer|preferably|avoid|"
    r"should not|shouldn't|make sure|no need to)\b"
    r"|不要|必须|务必|只(?!是)|禁止|请勿|不能|不得|不许|一定要|千万|避免|尽量|优先",
    re.IGNORECASE,
)
_DECISION_RE = re.compile(
    r"\b(?:I will|I'll|I am going to|I'm going to|I decided|we decided|decided to|I chose|"
    r"we chose|chose to|going with|instead of|we will|we'll|let's)\b"
    r"|决定|我将|我会|改用|采用|选用|换成",
    re.IGNORECASE,
)
_EXIT_CODE_RE = re.compile(
    r"(?i:\b(?:exit(?:ed)?(?:\s+with)?\s+(?:code|status)|exit_code|return\s*code|returncode)"
    r"\s*[:=]?\s*)-?[1-9]\d*\b"
)
# Exception names count only where an error is reported (a line starting with the name, or
# "Name: message"), so source code full of `raise ValueError(` is not mistaken for errors.
_ERROR_RE = re.compile(
    r"Traceback \(most recent call last\)|^\s*(?:[\w.]+\.)?\w*(?:Error|Exception)\b\s*(?::|$)"
    r"|\b\w+(?:Error|Exception): \S|(?i:\berror(?:\[\w+\])?:)|\bERROR\b|\bFAILED\b"
    r"|\bfatal:|\bpanic:|^Exception in thread|\bERR!|^E\s{2,}\S|错误|失败|异常|"
    + _EXIT_CODE_RE.pattern
)
# Common shell and test-runner failures that name no exception. Kept specific: "Error 2"
# only after make's "***" or at the end of a line, "N failed" only for N > 0.
_SHELL_ERROR_RE = re.compile(
    r"No such file or directory|command not found|Permission denied|Connection refused"
    r"|Operation not permitted|Segmentation fault|core dumped"
    r"|\*\*\*.*\bError \d+\b|\bError \d+\s*$|\b[1-9]\d* failed\b"
)
# What counts as pasted error output inside a user's message: only structural markers, so a
# request that merely mentions errors ("search the logs for 错误") is not taken for one.
_USER_ERROR_RE = re.compile(
    r"Traceback \(most recent call last\)|\b\w+(?:Error|Exception): \S"
    r"|(?i:\berror(?:\[\w+\])?:\s*\S)|\bfatal:|\bpanic:|^E\s{2,}\S|\*\*\*.*\bError \d+\b"
)
# Lines that mean the command itself failed (not just that its output mentions an error).
_FAILURE_RE = re.compile(
    r"Traceback \(most recent call last\)|\*\*\*.*\bError \d+\b|\b[1-9]\d* failed\b"
    r"|^FAILED\b|Segmentation fault|command not found"
)
_NAMED_ERROR_RE = re.compile(
    r"\w(?:Error|Exception)\b|(?i:\b(?:error|fatal|panic):)|错误|失败|异常"
)
_PATH_LIKE_RE = re.compile(r"[/\\]|\.\w{1,10}$")  # a separator or a file extension
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])")
_PATH_KEYS = frozenset(
    {
        *("file_path", "path", "filepath", "filename", "file", "file_name", "target_file"),
        *("notebook_path", "source", "destination", "dest", "src", "dst", "target"),
        *("directory", "dir", "cwd", "output_path", "input_path", "paths", "files", "file_paths"),
    }
)
_PATH_IN_TEXT_RE = re.compile(
    r"(?<![\w./~\\:-])((?:/|\./|\.\./|~/)[^\s\"'`<>|;,()\[\]{}]*[\w-]\.[A-Za-z0-9]{1,10})(?![\w/])"
)
_OFFLOAD_RE = re.compile(
    r'file_path=(?:("(?:[^"\\\n]|\\.)*")|([^\s"]+))|(?i:saved (?:to|in|at)(?: the file)?)\s+`?'
    r"((?:/|\./|~/|[A-Za-z]:\\)[^\s`'\"]+[\w-])"
)


@dataclass(frozen=True)
class ExtractedFacts:
    """Facts taken verbatim from a transcript; see :func:`extract_facts`."""

    user_requests: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    error_lines: tuple[str, ...] = ()
    file_paths: tuple[str, ...] = ()
    tool_outcomes: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()


def unique(items: Iterable[str]) -> list[str]:
    """The non-empty ``items`` in order, each once."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a note of how many were omitted."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [{len(text) - limit} more characters omitted]"


def _sentences(text: str) -> Iterable[str]:
    in_fence = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if in_fence or line.lstrip().startswith("```"):
            continue  # code is not a statement of the user's
        for sentence in _SENTENCE_SPLIT_RE.split(line):
            sentence = BULLET_PREFIX_RE.sub("", sentence).strip()
            if sentence:
                yield cut(sentence, _MAX_SENTENCE_CHARS)


def _is_summary_message(message: TranscriptMessage) -> bool:
    text = message.text().strip()
    return bool(text) and split_summary_message(text) != text


def user_texts(messages: Sequence[TranscriptMessage]) -> list[tuple[str, str]]:
    """(timestamp, text) of each user message, skipping injected summary messages."""
    out = []
    for message in messages:
        text = message.text().strip()
        if message.role == "user" and text and not _is_summary_message(message):
            out.append((message.timestamp, text))
    return out


def first_line(text: str) -> str:
    """The first line with a word character (not a truncation marker), cut to 200."""
    for line in text.split("\n"):
        line = line.strip()
        if re.search(r"\w", line) and not line.startswith("<<<TRUNCATED>>>"):
            return cut(line, 200)
    return "(no output)"


def _walk_paths(value: object, key: str = "") -> Iterable[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk_paths(v, str(k).lower())
    elif isinstance(value, list):
        for v in value:
            yield from _walk_paths(v, key)
    elif isinstance(value, str) and key in _PATH_KEYS:
        path = value.strip()
        if "\n" not in path and len(path) < 500 and _PATH_LIKE_RE.search(path):
            yield path


def _call_paths(raw_input: str) -> list[str]:
    try:
        parsed = json.loads(raw_input)
    except ValueError:
        parsed = None
    found = list(_walk_paths(parsed))
    found += [m.group(1) for m in _PATH_IN_TEXT_RE.finditer(raw_input)]
    return unique(found)


def _offload_paths(output: str) -> list[str]:
    found = []
    for match in _OFFLOAD_RE.finditer(output):
        quoted, bare, saved = match.groups()
        if quoted:
            try:
                found.append(str(json.loads(quoted)))
            except ValueError:
                found.append(quoted.strip('"'))
        else:
            found.append(bare or saved)
    return unique(found)


def _error_lines(text: str) -> list[str]:
    # A very long line (minified JSON, a one-line log dump) is data that happens to contain
    # the word "error", not an error line worth carrying verbatim.
    return [
        line.strip()
        for line in text.split("\n")
        if len(line) <= _MAX_ERROR_LINE_CHARS
        and (_ERROR_RE.search(line) or _SHELL_ERROR_RE.search(line))
    ]


def _most_telling(lines: Sequence[str]) -> str:
    """The last line naming an exception or error message, else the last line."""
    named = [line for line in lines if _NAMED_ERROR_RE.search(line)]
    return (named or list(lines))[-1]


def extract_facts(messages: Sequence[TranscriptMessage]) -> ExtractedFacts:
    """Collect user requests, constraints, error lines, file paths and tool outcomes verbatim."""
    user = user_texts(messages)
    constraints = [s for _, text in user for s in _sentences(text) if _CONSTRAINT_RE.search(s)]
    errors: list[str] = []
    paths: list[str] = []
    outcomes: list[str] = []
    decisions: list[str] = []
    call_targets: dict[str, str] = {}
    for message in messages:
        if _is_summary_message(message):
            continue  # an earlier summary is merged as previous_summary, not mined again
        for part in message.parts:
            if part.kind == "text":
                if message.role == "user":
                    errors += [
                        line.strip()
                        for line in part.text.split("\n")
                        if len(line) <= _MAX_ERROR_LINE_CHARS and _USER_ERROR_RE.search(line)
                    ]
                else:
                    decisions += [s for s in _sentences(part.text) if _DECISION_RE.search(s)]
            elif part.kind == "tool_call":
                found = _call_paths(part.text)
                paths += found
                if found and part.tool_call_id:
                    call_targets[part.tool_call_id] = found[0]
            elif part.kind == "tool_result":
                lines = _error_lines(part.text)
                failed = part.is_error or any(
                    _EXIT_CODE_RE.search(x) or _FAILURE_RE.search(x) for x in lines
                )
                if failed and not lines:
                    lines = [first_line(part.text)]
                errors += lines
                paths += _offload_paths(part.text)
                name = part.tool_name or "tool"
                target = call_targets.get(part.tool_call_id or "")
                label = f"{name}({target})" if target else name
                detail = cut(_most_telling(lines), 200) if failed else first_line(part.text)
                outcomes.append(f"{label}: {'error' if failed else 'ok'} — {detail}")
    return ExtractedFacts(
        user_requests=tuple(cut(text, MAX_REQUEST_CHARS) for _, text in user),
        constraints=tuple(unique(constraints)),
        error_lines=tuple(unique(errors)[-MAX_ERROR_LINES:]),
        file_paths=tuple(unique(paths)),
        tool_outcomes=tuple(outcomes),
        decisions=tuple(unique(cut(d, 300) for d in decisions)[-_MAX_DECISIONS:]),
    )
