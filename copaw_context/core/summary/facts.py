"""Facts taken verbatim from a transcript: requests, constraints, errors, paths, outcomes.

The extractive summary is built from them, and the carry-over copies the constraints,
error lines and file paths into any summary word for word.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from copaw_context.core.summary.error_block import error_block, is_error_noise, is_noise
from copaw_context.core.summary.errors import (
    DECISIVE,
    WRAPPER,
    ErrorLine,
    keep_newest_ranked,
    most_telling,
    pasted_error_lines,
    rank_line,
    scan_errors,
    shows_failure,
)
from copaw_context.core.summary.markdown import BULLET_PREFIX_RE
from copaw_context.core.summary.message import split_summary_message
from copaw_context.core.summary.statements import (
    is_acknowledgement,
    is_constraint,
    is_decision,
    is_plan,
    join_reasons,
    last_nonempty,
    unchecked_items,
)
from copaw_context.core.summary.words import text_words
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = [
    "MAX_ERROR_LINES",
    "MAX_REQUEST_CHARS",
    "ExtractedFacts",
    "ResultFacts",
    "cut",
    "error_block",
    "extract_facts",
    "is_error_noise",
    "first_line",
    "forget_result_facts",
    "result_facts",
    "unique",
    "user_texts",
]

MAX_REQUEST_CHARS = 2000
MAX_ERROR_LINES = 40
_MAX_SENTENCE_CHARS = 600
_MAX_DECISIONS = 10
_MAX_PLAN_ITEMS = 8
_STATED_DECISION_RE = re.compile(r"(?i)decision\s*:|决[定策][:：]")  # a user's own decision

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
    # A path cut short ("…" in a snippet) is no path: it must end before a separator.
    r"((?:/|\./|~/|[A-Za-z]:\\)[^\s`'\"]+[\w-])(?=[\s`'\".,;:)]|$)"
)
_SAVED_RE = re.compile(r"[sS][aA][vV][eE][dD] ")  # what lower() turns into "saved "
_SAVED_START_RE = re.compile(r"[sSſ][aA][vV][eE][dD] ")
_PLACEHOLDER_RE = re.compile(r"[A-Z_]+")  # PATH, FILE: a hint's placeholder, not a path
# The package's own search results (memory_search): snippets of the archive and the logs,
# already kept there; mining them would copy old errors and cut paths into the summary.
_OWN_SEARCH_RE = re.compile(r"\d+ result\(s\) for .*, best first:|No memory matches ")
_OWN_SEARCH_TOOLS = frozenset({"memory_search"})
_TITLE_RE = re.compile(r"(?is)<title[^>]*>\s*(.*?)\s*</title>")


@dataclass(frozen=True)
class ExtractedFacts:
    """Facts taken verbatim from a transcript; see :func:`extract_facts`."""

    user_requests: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    error_lines: tuple[str, ...] = ()
    file_paths: tuple[str, ...] = ()
    tool_outcomes: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    plan: tuple[str, ...] = ()  # the last stated plan or pending work (open task items)
    error_lines_omitted: int = 0  # older error lines left out of ``error_lines``
    passed: tuple[str, ...] = ()
    """The calls (``tool(target)``) whose last run passed: an earlier failure of the same
    call is closed (its error lines are not carried, its Blocked item goes)."""


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


def _is_data(line: str) -> bool:
    """A line of JSON or markup rather than prose (a log record, a page's first tag)."""
    return line[:1] in "{[<" or line.count('":') >= 3 or '"},{"' in line


def outcome_detail(text: str) -> str:
    """What a successful tool output was, in a few words: its first line of prose, a page's
    title, or the shape of data (raw JSON and markup are not an outcome)."""
    line = first_line(text)
    if not _is_data(line):
        return line
    lines = text.count("\n") + 1
    title = _TITLE_RE.search(text[:20_000])
    if title and title.group(1):
        return f"[page: {cut(' '.join(title.group(1).split()), 120)}; {lines} lines]"
    kind = "markup" if line.startswith("<") else "JSON"
    return f"[{kind}, {lines} lines]"


def _is_own_search(part: TranscriptPart) -> bool:
    if part.tool_name in _OWN_SEARCH_TOOLS:
        return True
    return bool(_OWN_SEARCH_RE.match(part.text.lstrip()))


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


_COMMAND_KEYS = ("command", "cmd", "script")


def _call_command(raw_input: str) -> str:
    """The command a shell-like call runs (its ``command`` argument), cut to 120: what
    tells two runs of one call apart ("shell(pytest tests/a.py)")."""
    try:
        parsed = json.loads(raw_input)
    except ValueError:
        return ""
    if not isinstance(parsed, dict):
        return ""
    for key in _COMMAND_KEYS:
        value = parsed.get(key)
        if isinstance(value, str) and value.strip() and "\n" not in value.strip():
            command = " ".join(value.split())
            return command if len(command) <= 120 else command[:119] + "…"
    return ""


def _offload_paths(output: str) -> list[str]:
    at = output.find("file_path=")
    if at < 0 and _SAVED_RE.search(output) is None:
        return []  # the pattern would scan the whole output for nothing
    # It scans char by char: it is tried from where a match can start, the first
    # "file_path=" or "saved " in any case (the pattern's (?i) takes "ſ" for an "s").
    start = _SAVED_START_RE.search(output, 0, at + len("saved ") if at >= 0 else len(output))
    at = start.start() if start is not None else at
    found = []
    for match in _OFFLOAD_RE.finditer(output, at):
        quoted, bare, saved = match.groups()
        if quoted:
            try:
                found.append(str(json.loads(quoted)))
            except ValueError:
                found.append(quoted.strip('"'))
        elif bare:
            bare = bare.rstrip(".,;:)")
            if _PATH_LIKE_RE.search(bare) and not _PLACEHOLDER_RE.fullmatch(bare):
                found.append(bare)
        else:
            found.append(saved)
    return unique(found)


@dataclass(frozen=True, slots=True)
class ResultFacts:
    """What a tool result's text says on its own (see :func:`result_facts`)."""

    errors: tuple[ErrorLine, ...]
    block: tuple[ErrorLine, ...]  # the errors worth carrying (:func:`error_block`)
    failed: bool  # its error lines say that the command failed
    paths: tuple[str, ...]  # offloaded files it names
    first: str  # its first line (:func:`first_line`)
    detail: str  # what it was, as a success (:func:`outcome_detail`)
    words: tuple[str, ...]  # its content words (:func:`.text_words`: the rules' evidence)


_MEMO_RESULTS = 8192
_memo_lock = threading.Lock()
_memo: OrderedDict[bytes, ResultFacts] = OrderedDict()


def result_facts(text: str) -> ResultFacts:
    """The facts of one tool result's ``text``, remembered by its content (a 128-bit digest
    of its UTF-8 bytes): stage 2 computes them once a result is settled in its last form,
    so a compaction of it only gathers them. Bounded (least recently used first out)."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _memo_lock:
        known = _memo.get(key)
        if known is not None:
            _memo.move_to_end(key)
            return known
    found = tuple(scan_errors(text))
    facts = ResultFacts(
        errors=found,
        block=tuple(error_block(found, text)),
        failed=shows_failure(item.text for item in found),
        paths=tuple(_offload_paths(text)),
        first=first_line(text),
        detail=outcome_detail(text),
        words=tuple(text_words((text,))),
    )
    with _memo_lock:
        _memo[key] = facts
        while len(_memo) > _MEMO_RESULTS:
            _memo.popitem(last=False)
    return facts


def forget_result_facts() -> None:
    """Forget every remembered :func:`result_facts` (a benchmark's cold run)."""
    with _memo_lock:
        _memo.clear()


class _Collector:
    """The facts of a transcript, gathered message by message."""

    def __init__(self) -> None:
        self.errors: list[ErrorLine] = []
        self.paths: list[str] = []
        self.outcomes: list[str] = []
        self.decisions: list[str] = []
        self.plans: list[list[str]] = []
        self.call_targets: dict[str, str] = {}
        self.failed_lines: dict[str, list[str]] = {}  # a call's label -> its error lines
        self.passed: list[str] = []
        self.file_calls: set[str] = set()  # the calls naming a file (a read, a write)

    def text(self, role: str, text: str) -> None:
        plan = unchecked_items(text)
        sentences = list(join_reasons(_sentences(text)))
        if role == "user":
            pasted = pasted_error_lines(text)
            ranked = [ErrorLine(line, rank_line(line) or WRAPPER) for line in pasted]
            self.errors += error_block(ranked, text)
            self.decisions += [s for s in sentences if _STATED_DECISION_RE.match(s)]
        else:
            self.decisions += [s for s in sentences if is_decision(s) and not is_acknowledgement(s)]
            plan = [s for s in sentences if is_plan(s)] + plan
        self.plans.append(plan)

    def tool_call(self, part: TranscriptPart) -> None:
        found = _call_paths(part.text)
        self.paths += found
        target = found[0] if found else _call_command(part.text)
        if target and part.tool_call_id:
            self.call_targets[part.tool_call_id] = target
            if found:
                self.file_calls.add(part.tool_call_id)

    def _close(self, label: str) -> None:
        """A passing run of ``label``: its earlier failures are no longer open."""
        closed = set(self.failed_lines.pop(label, ()))
        closed -= {line for lines in self.failed_lines.values() for line in lines}
        self.errors = [item for item in self.errors if item.text not in closed]
        failed = f"{label}: error — "
        self.outcomes = [o for o in self.outcomes if not o.startswith(failed)]
        self.passed = [*(p for p in self.passed if p != label), label]

    def tool_result(self, part: TranscriptPart) -> None:
        if _is_own_search(part) and not part.is_error:
            label = part.tool_name or "memory_search"
            header = first_line(part.text).removesuffix(", best first:")
            self.outcomes.append(f"{label}: ok — {header}")
            return
        known = result_facts(part.text)
        found = list(known.errors)
        failed = part.is_error or known.failed
        if failed and not found:
            found = [ErrorLine(known.first, DECISIVE)]
            block = error_block(found, part.text)
        else:
            block = list(known.block)
        if failed or (part.tool_call_id or "") not in self.file_calls:
            # the saved full text of a file's successful read is no fact: the file is
            self.paths += known.paths
        name = part.tool_name or "tool"
        target = self.call_targets.get(part.tool_call_id or "")
        label = f"{name}({target})" if target else name
        if target and not failed and not block:  # it ran clean: its earlier failures close
            self._close(label)
        elif target:
            self.failed_lines.setdefault(label, []).extend(item.text for item in block)
            self.passed = [p for p in self.passed if p != label]
        self.errors += block
        detail = cut(most_telling(found), 200) if failed else known.detail
        self.outcomes.append(f"{label}: {'error' if failed else 'ok'} — {detail}")


def extract_facts(messages: Sequence[TranscriptMessage]) -> ExtractedFacts:
    """Collect user requests, constraints, error lines, file paths, tool outcomes, decisions
    (with their reasons) and the last stated plan, verbatim.

    Error lines are recognised by toolchain family (see :mod:`.errors`); past
    ``MAX_ERROR_LINES`` the newest are kept and ``error_lines_omitted`` counts the others.
    """
    user = user_texts(messages)
    constraints = [s for _, text in user for s in _sentences(text) if is_constraint(s)]
    found = _Collector()
    for message in messages:
        if _is_summary_message(message):
            continue  # an earlier summary is merged as previous_summary, not mined again
        for part in message.parts:
            if part.kind == "text":
                found.text(message.role, part.text)
            elif part.kind == "tool_call":
                found.tool_call(part)
            elif part.kind == "tool_result":
                found.tool_result(part)
    firsts: dict[str, ErrorLine] = {}
    for item in found.errors:
        if item.text:
            firsts.setdefault(item.text, item)
    errors = list(firsts.values())
    if any(not is_noise(item) for item in errors):  # the errors, not what is around them
        errors = [item for item in errors if not is_noise(item)]
    kept, omitted = keep_newest_ranked(errors, MAX_ERROR_LINES)
    plan = [cut(item, 300) for item in unique(last_nonempty(found.plans))]
    return ExtractedFacts(
        user_requests=tuple(cut(text, MAX_REQUEST_CHARS) for _, text in user),
        constraints=tuple(unique(constraints)),
        error_lines=tuple(item.text for item in kept),
        file_paths=tuple(unique(found.paths)),
        tool_outcomes=tuple(found.outcomes),
        decisions=tuple(unique(cut(d, 300) for d in found.decisions)[-_MAX_DECISIONS:]),
        plan=tuple(plan[-_MAX_PLAN_ITEMS:]),
        error_lines_omitted=omitted,
        passed=tuple(found.passed),
    )
