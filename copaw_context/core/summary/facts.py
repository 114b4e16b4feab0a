"""Facts taken verbatim from a transcript: requests, constraints, errors, paths, outcomes.

The extractive summary is built from them, and the carry-over copies the constraints,
error lines and file paths into any summary word for word. What each tool result says on
its own is computed once, remembered by its content (:mod:`.result_facts`).
"""

from __future__ import annotations

import json
import re
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
)
from copaw_context.core.summary.markdown import BULLET_PREFIX_RE
from copaw_context.core.summary.message import split_summary_message
from copaw_context.core.summary.result_facts import PATH_LIKE_RE, first_line, result_facts
from copaw_context.core.summary.statements import (
    is_acknowledgement,
    is_constraint,
    is_decision,
    is_plan,
    is_plan_heading,
    join_reasons,
    last_nonempty,
    unchecked_items,
)
from copaw_context.core.summary.verbatim import cut, unique
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = [
    "MAX_ERROR_LINES",
    "MAX_REQUEST_CHARS",
    "ExtractedFacts",
    "error_block",
    "extract_facts",
    "is_error_noise",
    "user_texts",
]

MAX_REQUEST_CHARS = 2000
MAX_ERROR_LINES = 40
_MAX_SENTENCE_CHARS = 600
_MAX_DECISIONS = 10
_MAX_PLAN_ITEMS = 8
_STATED_DECISION_RE = re.compile(r"(?i)decision\s*:|决[定策][:：]")  # a user's own decision

# A tool that only reads what it names: read_file, cat, view_file, grep, list_dir, ...
_READ_TOOL_RE = re.compile(
    r"(?:^|[_.-])(?:read|cat|view|show|open|get|list|ls|glob|grep|rg|search|find|head|tail"
    r"|stat|less|more)(?:$|[_.-])",
    re.IGNORECASE,
)
# ... unless it also changes it: search_replace, find_and_replace, open_and_edit, get_or_create.
_WRITE_TOOL_RE = re.compile(
    r"write|edit|replace|patch|create|update|delete|remove|move|rename|apply|insert|append"
    r"|save|put|set|modify|mkdir|touch|rm|mv|cp|copy",
    re.IGNORECASE,
)
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
# The package's own search results (memory_search): snippets of the archive and the logs,
# already kept there; mining them would copy old errors and cut paths into the summary.
_OWN_SEARCH_RE = re.compile(r"\d+ result\(s\) for .*, best first:|No memory matches ")
_OWN_SEARCH_TOOLS = frozenset({"memory_search"})


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
    read_paths: tuple[str, ...] = ()
    """The ``file_paths`` only read here (by a call of a reading tool: ``read_file``,
    ``cat``, ``grep``, ...; never written, edited or named by a failure): the trim leaves
    them out before a changed one."""
    task: str | None = None
    """The user's task in their words: the first line of the first request that is not an
    acknowledgement, without its constraint sentences (those are ``constraints``)."""


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


def _is_own_search(part: TranscriptPart) -> bool:
    if part.tool_name in _OWN_SEARCH_TOOLS:
        return True
    return bool(_OWN_SEARCH_RE.match(part.text.lstrip()))


def _walk_paths(value: object, key: str = "") -> Iterable[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk_paths(v, str(k).lower())
    elif isinstance(value, list):
        for v in value:
            yield from _walk_paths(v, key)
    elif isinstance(value, str) and key in _PATH_KEYS:
        path = value.strip()
        if "\n" not in path and len(path) < 500 and PATH_LIKE_RE.search(path):
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
        self.read_calls: set[str] = set()  # the calls only reading the files they name
        self.read: list[str] = []  # paths named by a reading call
        self.changed: list[str] = []  # paths named otherwise (a write, an edit, a failure)

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
            plan = [s for s in sentences if is_plan(s) and not is_plan_heading(s)] + plan
        self.plans.append(plan)

    def tool_call(self, part: TranscriptPart) -> None:
        found = _call_paths(part.text)
        self.paths += found
        name = part.tool_name or ""
        reads = bool(_READ_TOOL_RE.search(name)) and not _WRITE_TOOL_RE.search(name)
        if reads:
            self.read += found
        else:
            self.changed += found
        target = found[0] if found else _call_command(part.text)
        if target and part.tool_call_id:
            self.call_targets[part.tool_call_id] = target
            if found:
                self.file_calls.add(part.tool_call_id)
                if reads:
                    self.read_calls.add(part.tool_call_id)

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
            self.changed += known.paths
        name = part.tool_name or "tool"
        target = self.call_targets.get(part.tool_call_id or "")
        label = f"{name}({target})" if target else name
        if target and not failed and not block:  # it ran clean: its earlier failures close
            self._close(label)
        elif target:
            self.failed_lines.setdefault(label, []).extend(item.text for item in block)
            self.passed = [p for p in self.passed if p != label]
        self.errors += block
        if not failed and (part.tool_call_id or "") in self.read_calls:
            return  # a clean read is no progress: the file is listed as read
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
    changed = set(found.changed)
    return ExtractedFacts(
        user_requests=tuple(cut(text, MAX_REQUEST_CHARS) for _, text in user),
        constraints=tuple(unique(constraints)),
        error_lines=tuple(item.text for item in kept),
        file_paths=tuple(unique(found.paths)),
        read_paths=tuple(p for p in unique(found.read) if p not in changed),
        tool_outcomes=tuple(found.outcomes),
        decisions=tuple(unique(cut(d, 300) for d in found.decisions)[-_MAX_DECISIONS:]),
        plan=tuple(plan[-_MAX_PLAN_ITEMS:]),
        error_lines_omitted=omitted,
        passed=tuple(found.passed),
        task=_task(text for _, text in user),
    )


_TASK_CHARS = 300


def _task(requests: Iterable[str]) -> str | None:
    """See :attr:`ExtractedFacts.task` (cut to 300 characters)."""
    for request in requests:
        line = next((line.strip() for line in request.split("\n") if line.strip()), "")
        if not line or is_acknowledgement(line):
            continue
        for sentence in _SENTENCE_SPLIT_RE.split(line):
            if sentence.strip() and is_constraint(sentence):
                line = line.replace(sentence, "", 1)
        line = " ".join(line.split())
        if line:
            return cut(line, _TASK_CHARS)
    return None
