"""What one tool result's text says on its own: its error lines, the offloaded files it
names, its first line and what it was as a success (:class:`ResultFacts`).

Computed once per text and remembered by its content (:func:`result_facts`): stage 2 computes
them when a result settles, a compaction (:mod:`.facts`) only gathers them.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from copaw_context.core.summary.error_block import error_block
from copaw_context.core.summary.errors import ErrorLine, scan_errors, shows_failure
from copaw_context.core.summary.verbatim import cut, unique
from copaw_context.core.summary.words import text_words

__all__ = [
    "PATH_LIKE_RE",
    "ResultFacts",
    "first_line",
    "forget_result_facts",
    "outcome_detail",
    "result_facts",
]

PATH_LIKE_RE = re.compile(r"[/\\]|\.\w{1,10}$")  # a separator or a file extension
_OFFLOAD_RE = re.compile(
    r'file_path=(?:("(?:[^"\\\n]|\\.)*")|([^\s"]+))|(?i:saved (?:to|in|at)(?: the file)?)\s+`?'
    # A path cut short ("…" in a snippet) is no path: it must end before a separator.
    r"((?:/|\./|~/|[A-Za-z]:\\)[^\s`'\"]+[\w-])(?=[\s`'\".,;:)]|$)"
)
_SAVED_RE = re.compile(r"[sS][aA][vV][eE][dD] ")  # what lower() turns into "saved "
_SAVED_START_RE = re.compile(r"[sSſ][aA][vV][eE][dD] ")
_PLACEHOLDER_RE = re.compile(r"[A-Z_]+")  # PATH, FILE: a hint's placeholder, not a path
_TITLE_RE = re.compile(r"(?is)<title[^>]*>\s*(.*?)\s*</title>")


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


def first_line(text: str) -> str:
    """The first line with a word character (not a truncation marker), cut to 200."""
    for line in text.split("\n"):
        line = line.strip()
        if re.search(r"\w", line) and not line.startswith("<<<TRUNCATED>>>"):
            return cut(line, 200)
    return "(no output)"


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
            if PATH_LIKE_RE.search(bare) and not _PLACEHOLDER_RE.fullmatch(bare):
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
