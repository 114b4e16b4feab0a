"""How one summary line is judged junk (:func:`item_junk`) and when two lines say the same
(:func:`dedup_key`): the line-level rules :mod:`.junk` applies to whole summaries."""

from __future__ import annotations

import functools
import re
from typing import Literal, get_args

from copaw_context.core.summary.clean import core, is_template_line
from copaw_context.core.summary.clean import says_nothing as _says_nothing
from copaw_context.core.summary.language import CARRY_LABELS, WORDS
from copaw_context.core.summary.markdown import BULLET_PREFIX_RE, is_placeholder
from copaw_context.core.summary.statements import is_acknowledgement, is_sign_off

__all__ = [
    "JUNK_REASONS",
    "LABEL_RE",
    "OUTCOME_RE",
    "JunkReason",
    "dedup_key",
    "is_exact",
    "item_junk",
    "line_body",
    "says_nothing",
    "strip_template_prefix",
]

JunkReason = Literal[
    "placeholder",
    "template_prefix",
    "empty",
    "duplicate",
    "notice",
    "acknowledgement",
    "json",
    "error_noise",
]
JUNK_REASONS: tuple[JunkReason, ...] = get_args(JunkReason)


_CHECKBOX_RE = re.compile(r"^\[[ xX]\]\s*")
# The template's "decision - reason:" in front of an item, or its first word alone
# ("decision - Because ...", "决定 - 因为……": a small model copies the slot's word).
_TEMPLATE_PREFIX_RE = re.compile(
    r"^(?:\*\*)?(?:decision\s*[-–—/]\s*reason|决定\s*[-–—/]\s*原因|决策\s*[-–—/]\s*原因"
    r"|decision\s+[-–—]\s+(?=\S)|(?:决定|决策)\s*[-–—]\s*(?=\S))"
    r"(?:\*\*)?\s*[:：]?\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
_TIMESTAMP_RE = re.compile(r"^\s*\([^()\n]{4,40}\)")
# Labels that only say what kind of fact follows: stripped before two items are compared.
# The action labels ("Continue with the user request: X") make a statement of their own.
_KIND_WORDS = ("planned", "file", "read_file", "error", "last_error")
_LABELS = sorted(
    {
        *(WORDS[lang][key] for lang in WORDS for key in _KIND_WORDS),
        *(label.rstrip(":：") for lang in CARRY_LABELS for label in CARRY_LABELS[lang]),
    },
    key=len,
    reverse=True,
)
_ALL_LABELS = sorted(
    {WORDS[lang][key] for lang in WORDS for key in WORDS[lang] if key != "colon"},
    key=len,
    reverse=True,
)
LABEL_RE = re.compile(
    r"^(?:" + "|".join(re.escape(label) for label in _LABELS) + r")"
    r"(?:\s*\([^()\n]*\))?\s*(?::|：)\s*"
)
_ANY_LABEL_RE = re.compile(
    r"^(?:" + "|".join(re.escape(label) for label in _ALL_LABELS) + r")"
    r"(?:\s*\([^()\n]*\))?\s*(?::|：)\s*"
)
# Tools that read or search: a successful one's first output line is a file's content or
# a hit, never an outcome worth a line.
_READ_TOOL_RE = re.compile(
    r"^(?:\w+[._])?(?:read|cat|view|open|grep|search|glob|find|fetch|browse|list|ls|head|tail)"
    r"(?:[._]\w+)?\(|^memory_search\b",
    re.IGNORECASE,
)
# "tool(target): ok — detail" / "tool: error — detail": an outcome item of the extractive
# summary; its detail is what the comparison and the notice rule look at.
OUTCOME_RE = re.compile(r"^[\w.-]+(?:\([^\n]*?\))?: (?P<status>ok|error) — (?P<detail>.*)$")
_NOTICE_RE = re.compile(
    r"<<<TRUNCATED>>>|The output above was truncated|call `?read_file`? with file_path="
    r"|\bfile_path=PATH\b|^File: PATH$|输出已截断",
    re.IGNORECASE,
)
_SOURCE_LINE_RE = re.compile(r"^\s*\d{1,6}(?:\s{2,}|\s*[|│:→\t]\s*)\S")  # "  12  def f():"
_SEARCH_HIT_RE = re.compile(
    r"^\s*(?:\d+\.\s+)?[\w./~-]+:\d+(?::\d+)?:\s|^\d+ result\(s\) for |^No memory matches "
    r"|^…|…$"
)
_EMPTY_RE = re.compile(r"^(?:\d{1,9}[.)、])?[\s\-*+•:：.。,，;；()\[\]【】（）_~`#>|]*$")


def strip_template_prefix(item: str) -> str:
    """``item`` without a ``decision - reason:`` template prefix (its bullet kept)."""
    match = BULLET_PREFIX_RE.match(item)
    bullet = match.group(0) if match else ""
    rest = item[len(bullet) :]
    box = _CHECKBOX_RE.match(rest)
    box_text = box.group(0) if box else ""
    body = rest[len(box_text) :]
    stripped = _TEMPLATE_PREFIX_RE.sub("", body, count=1)
    if stripped == body or not stripped.strip():
        return item
    return bullet + box_text + stripped


def line_body(line: str) -> str:
    """A line's text without its bullet, checkbox and emphasis around it."""
    text = BULLET_PREFIX_RE.sub("", line.strip(), count=1)
    return _CHECKBOX_RE.sub("", text).strip()


def _unlabelled(text: str) -> str:
    """``text`` without a label that only names its kind ("Error: ", "User request (t): ");
    a failed tool outcome is compared by its error line."""
    text = LABEL_RE.sub("", text, count=1)
    outcome = OUTCOME_RE.match(text)
    if outcome and outcome.group("status") == "error":
        return outcome.group("detail")
    return text


_ACTION_WORDS = ("request", "latest", "continue", "confirm", "note")
_ACTIONS = {WORDS[lang][key]: key for lang in WORDS for key in _ACTION_WORDS}


@functools.lru_cache(maxsize=1 << 15)
def dedup_key(line: str) -> tuple[str, str]:
    """The form two items are compared in: labels, timestamps, emphasis, case and
    punctuation aside; an action label ("Continue with the user request") stays as the
    kind of statement it makes."""
    body = line_body(line)
    label = _ANY_LABEL_RE.match(body)
    kind = ""
    if label:
        word = label.group(0).rstrip(":： ").split(" (")[0].split("（")[0]
        kind = _ACTIONS.get(word, "")
        if kind:
            body = body[label.end() :]
    return kind, core(_TIMESTAMP_RE.sub("", _unlabelled(body)))


@functools.lru_cache(maxsize=1 << 15)
def is_exact(line: str) -> bool:
    """Whether ``line`` carries an exact fact (an error or a file, labelled)."""
    label = LABEL_RE.match(line_body(line))
    if not label:
        return False
    word = label.group(0).rstrip(":： ").split(" (")[0]
    kinds = ("file", "read_file", "error", "last_error")
    exact = {WORDS[lang][key] for lang in WORDS for key in kinds}
    return word in exact


@functools.lru_cache(maxsize=1 << 15)
def item_junk(line: str, *, exact: bool = False) -> JunkReason | None:
    """Why one item (or one sub-item of a carried block) is junk on its own, if it is.

    ``exact``: the line is a carried exact fact (data is then no reason). A placeholder
    is only junk beside real items (see :func:`find_junk`), but a checkbox holding one
    ("- [ ] None") and a template slot always are.
    """
    stripped = line.strip()
    body = line_body(stripped)
    if not body or _EMPTY_RE.match(body):
        return "empty"
    if is_template_line(stripped):
        return "placeholder"
    if _CHECKBOX_RE.match(BULLET_PREFIX_RE.sub("", stripped, count=1)) and is_placeholder(stripped):
        return "placeholder"
    if _TEMPLATE_PREFIX_RE.match(body) and _TEMPLATE_PREFIX_RE.sub("", body, count=1) != body:
        return "template_prefix"
    text = _ANY_LABEL_RE.sub("", body, count=1)
    if not text.strip() and _ANY_LABEL_RE.match(body):
        return "empty"
    if _NOTICE_RE.search(body):
        return "notice"
    outcome = OUTCOME_RE.match(text)
    if outcome:
        detail = outcome.group("detail").strip()
        if not detail:
            return "empty"
        if outcome.group("status") == "ok" and (
            _READ_TOOL_RE.match(text)
            or _SOURCE_LINE_RE.match(detail)
            or _SEARCH_HIT_RE.search(detail)
        ):
            return "notice"
        text = detail
    if (is_acknowledgement(text) or is_sign_off(text)) and not exact:
        return "acknowledgement"
    if not exact and not is_exact(stripped) and _looks_json(text):
        return "json"
    return None


def _looks_json(text: str) -> bool:
    """A JSON object or array, or a fragment of one (``"a": 1, "b": 2``, ``"},{"``)."""
    text = text.strip()
    if text[:1] in "[{" and '"' in text and re.search(r'"\s*[:,\]}]', text):
        return True
    return text.count('":') >= 2 or '"},{"' in text


@functools.lru_cache(maxsize=1 << 15)
def says_nothing(item: str, section: str | None = None) -> bool:
    """:func:`~.clean.says_nothing`, remembered: a summary's items are judged again at
    every compaction that carries them."""
    return _says_nothing(item, section)
