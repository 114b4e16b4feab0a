"""Junk lines of a summary: what a reader should never meet, named by reason.

One rule set serves twice: :func:`find_junk` is the checker (it reads a rendered summary
and lists its junk lines; the quality recipe counts them), and :func:`drop_junk` removes the
same lines from a :class:`~.model.Summary` before it is rendered, so a summary the package
writes holds none of them by construction. The reasons:

- ``placeholder``: "(none)" or "No decisions were made." beside real items, a checkbox
  holding nothing ("- [ ] None", "- [ ] 无"), a template slot of the prompt (either language,
  with or without its brackets);
- ``template_prefix``: the template's ``decision - reason:`` written in front of an item
  (:func:`drop_junk` strips the prefix and keeps the item);
- ``empty``: a bullet, checkbox or label with nothing after it;
- ``duplicate``: an item that says what an earlier one says, labels and emphasis aside,
  also across sections ("Error: X" under Critical Context and "tool: error — X" under
  Blocked);
- ``notice``: the package's own notices and hints (``<<<TRUNCATED>>>``, "call `read_file`
  with file_path=..."), a tool outcome whose detail is a numbered source line, a search
  hit or a result count;
- ``acknowledgement``: a reply that only acknowledges ("Understood, I'll keep that in
  mind.", "好的，我记住了") listed as an item, or the model's closing offer after its
  summary ("Let me know if you need anything else!", "希望对你有帮助！");
- ``json``: a raw JSON fragment as an item;
- ``error_noise``: beside an error line, what only surrounds it (a wrapper, a test tally,
  progress output), labelled ("Error: 1 failed, 22 passed") or listed as an item of
  Blocked, In Progress or Critical Context.

Exact facts (the carried errors, files and constraints) are never junk for being data:
an error line may well be a JSON log record.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, get_args

from copaw_context.core.summary.carry import carried_label
from copaw_context.core.summary.clean import core, drop_items, is_template_line
from copaw_context.core.summary.clean import says_nothing as _says_nothing
from copaw_context.core.summary.error_block import is_error_noise
from copaw_context.core.summary.errors import rank_line
from copaw_context.core.summary.language import (
    CARRY_LABELS,
    WORDS,
    Language,
)
from copaw_context.core.summary.markdown import BULLET_PREFIX_RE, is_placeholder
from copaw_context.core.summary.model import ITEM_KEYS, Block, ItemsKey, Summary
from copaw_context.core.summary.statements import is_acknowledgement, is_sign_off

__all__ = [
    "JUNK_REASONS",
    "JunkLine",
    "JunkReason",
    "drop_junk",
    "find_junk",
    "item_junk",
    "junk_counts",
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


@dataclass(frozen=True)
class JunkLine:
    """A junk line of a summary: why, the section it is in and its text."""

    reason: JunkReason
    section: str
    line: str


_CHECKBOX_RE = re.compile(r"^\[[ xX]\]\s*")
_TEMPLATE_PREFIX_RE = re.compile(
    r"^(?:\*\*)?(?:decision\s*[-–—/]\s*reason|决定\s*[-–—/]\s*原因|决策\s*[-–—/]\s*原因)"
    r"(?:\*\*)?\s*[:：]?\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)
_TIMESTAMP_RE = re.compile(r"^\s*\([^()\n]{4,40}\)")
# Labels that only say what kind of fact follows: stripped before two items are compared.
# The action labels ("Continue with the user request: X") make a statement of their own.
_KIND_WORDS = ("planned", "file", "error", "last_error")
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
_LABEL_RE = re.compile(
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
_OUTCOME_RE = re.compile(r"^[\w.-]+(?:\([^\n]*?\))?: (?P<status>ok|error) — (?P<detail>.*)$")
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


def _body(line: str) -> str:
    """A line's text without its bullet, checkbox and emphasis around it."""
    text = BULLET_PREFIX_RE.sub("", line.strip(), count=1)
    return _CHECKBOX_RE.sub("", text).strip()


def _unlabelled(text: str) -> str:
    """``text`` without a label that only names its kind ("Error: ", "User request (t): ");
    a failed tool outcome is compared by its error line."""
    text = _LABEL_RE.sub("", text, count=1)
    outcome = _OUTCOME_RE.match(text)
    if outcome and outcome.group("status") == "error":
        return outcome.group("detail")
    return text


_ACTION_WORDS = ("request", "latest", "continue", "confirm", "note")
_ACTIONS = {WORDS[lang][key]: key for lang in WORDS for key in _ACTION_WORDS}


@functools.lru_cache(maxsize=1 << 15)
def _key(line: str) -> tuple[str, str]:
    """The form two items are compared in: labels, timestamps, emphasis, case and
    punctuation aside; an action label ("Continue with the user request") stays as the
    kind of statement it makes."""
    body = _body(line)
    label = _ANY_LABEL_RE.match(body)
    kind = ""
    if label:
        word = label.group(0).rstrip(":： ").split(" (")[0].split("（")[0]
        kind = _ACTIONS.get(word, "")
        if kind:
            body = body[label.end() :]
    return kind, core(_TIMESTAMP_RE.sub("", _unlabelled(body)))


@functools.lru_cache(maxsize=1 << 15)
def _is_exact(line: str) -> bool:
    """Whether ``line`` carries an exact fact (an error or a file, labelled)."""
    label = _LABEL_RE.match(_body(line))
    if not label:
        return False
    word = label.group(0).rstrip(":： ").split(" (")[0]
    exact = {WORDS[lang][key] for lang in WORDS for key in ("file", "error", "last_error")}
    return word in exact


@functools.lru_cache(maxsize=1 << 15)
def item_junk(line: str, *, exact: bool = False) -> JunkReason | None:
    """Why one item (or one sub-item of a carried block) is junk on its own, if it is.

    ``exact``: the line is a carried exact fact (data is then no reason). A placeholder
    is only junk beside real items (see :func:`find_junk`), but a checkbox holding one
    ("- [ ] None") and a template slot always are.
    """
    stripped = line.strip()
    body = _body(stripped)
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
    outcome = _OUTCOME_RE.match(text)
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
    if not exact and not _is_exact(stripped) and _looks_json(text):
        return "json"
    return None


def _looks_json(text: str) -> bool:
    """A JSON object or array, or a fragment of one (``"a": 1, "b": 2``, ``"},{"``)."""
    text = text.strip()
    if text[:1] in "[{" and '"' in text and re.search(r'"\s*[:,\]}]', text):
        return True
    return text.count('":') >= 2 or '"},{"' in text


@functools.lru_cache(maxsize=1 << 15)
def _nothing(item: str) -> bool:
    """:func:`~.clean.says_nothing`, remembered: a summary's items are judged again at
    every compaction that carries them."""
    return _says_nothing(item)


class _Unit:
    """A line that is judged on its own: an item, or a sub-item of a carried block; with
    the error line it states, if it states one."""

    def __init__(self, section: str, text: str, exact: bool, error: str | None = None) -> None:
        self.section = section
        self.text = text
        self.exact = exact
        body = _body(text)
        if error is None and section in _ERROR_SECTIONS and rank_line(body) is not None:
            error = body  # an error line (or a tally, a wrapper) listed as a Blocked item
        self.error = error


_ERROR_SECTIONS = frozenset({"blocked", "in_progress", "critical"})


@functools.lru_cache(maxsize=1 << 15)
def _error_of(line: str) -> str | None:
    """The error line an item states ("Error: X", "Last error seen: X", "tool: error — X")."""
    body = _body(line)
    label = _LABEL_RE.match(body)
    if label:
        word = label.group(0).rstrip(":： ").split(" (")[0]
        if word in {WORDS[lang][key] for lang in WORDS for key in ("error", "last_error")}:
            return body[label.end() :]
    outcome = _OUTCOME_RE.match(body)
    if outcome and outcome.group("status") == "error":
        return outcome.group("detail")
    return None


def _units(section: str, item: str) -> Iterator[_Unit]:
    label = carried_label(item)
    if label is None:
        yield _Unit(section, item, _is_exact(item), _error_of(item))
        return
    for sub in item.split("\n")[1:]:
        if sub.strip():
            text = sub.strip()
            yield _Unit(section, text, label in (1, 2), _body(text) if label == 1 else None)


def _has_real_error(units: Iterator[_Unit]) -> bool:
    return any(u.error is not None and not is_error_noise(u.error) for u in units)


def _all_units(doc: Summary) -> Iterator[_Unit]:
    for section, items in _sections(doc):
        for item in items:
            yield from _units(section, item)


def _sections(summary: Summary) -> Iterator[tuple[str, list[str]]]:
    for key in ITEM_KEYS:
        if key != "progress_notes" or summary.items(key):
            yield key, summary.items(key)
    for block in (*summary.progress_other, *summary.other):
        yield block.title, block.items


def _ends(text: str) -> list[str]:
    """The word-aligned prefixes and suffixes of ``text`` at least 80% as long as it and 20
    characters at least (a near-duplicate of it leaves out only one end)."""
    if len(text) < 25:  # a part of 20 is 80% of 25: shorter texts have none
        return []
    least = max(20, -(-4 * len(text) // 5))
    out: list[str] = []
    at = text.find(" ", least)
    while at != -1:
        out.append(text[:at])
        at = text.find(" ", at + 1)
    at = text.rfind(" ", 0, len(text) - least + 1)
    while at != -1:
        out.append(text[at + 1 :])
        at = text.rfind(" ", 0, at)
    return out


class _Seen:
    """The items met so far by their comparison key, with the ends of each: an item that
    says what one of them says (equal, or one holding the other at one of its ends with the
    shorter at least 80% as long and 20 characters at least, both statements of one kind)
    is found by set lookups, linear in the number of items."""

    def __init__(self, real_error: bool = False) -> None:
        self.real_error = real_error  # the summary states an error: its noise is junk
        self.keys: set[tuple[str, str]] = set()
        self.ends: set[tuple[str, str]] = set()

    def add(self, key: tuple[str, str]) -> None:
        self.keys.add(key)
        kind, text = key
        self.ends.update((kind, part) for part in _ends(text))

    def holds(self, key: tuple[str, str]) -> bool:
        """Whether ``key`` says what an item met before says ("src api ts" is in many
        items that say something else: a short key only matches itself)."""
        if key in self.keys or key in self.ends:
            return True
        kind, text = key
        return any((kind, part) in self.keys for part in _ends(text))


def find_junk(summary: Summary | str, language: Language = "en") -> list[JunkLine]:
    """The junk lines of ``summary`` (a :class:`Summary` or its text), in order, each with
    its reason (see the module's list). An empty section's one "(none)" is no junk."""
    doc = summary if isinstance(summary, Summary) else Summary.parse(summary, language)
    found: list[JunkLine] = []
    seen = _Seen()
    real_error = _has_real_error(_all_units(doc))
    for section, items in _sections(doc):
        units = [unit for item in items for unit in _units(section, item)]
        real = any(not _nothing(u.text) for u in units)
        placeholder = False
        for unit in units:
            reason = item_junk(unit.text, exact=unit.exact)
            if reason is None and real_error and unit.error and is_error_noise(unit.error):
                reason = "error_noise"
            if reason is None and _nothing(unit.text):
                if real or placeholder:
                    reason = "placeholder"
                placeholder = True
            if reason is None and not _nothing(unit.text):
                key = _key(unit.text)
                if key[1] and seen.holds(key):
                    reason = "duplicate"
                elif key[1]:
                    seen.add(key)
            if reason is not None:
                found.append(JunkLine(reason, section, unit.text))
    return found


def junk_counts(summary: Summary | str, language: Language = "en") -> dict[str, int]:
    """How many junk lines ``summary`` holds, per reason (only the reasons found)."""
    return dict(Counter(line.reason for line in find_junk(summary, language)))


def _clean_item(item: str, section: str, seen: _Seen, counts: Counter[str]) -> str | None:
    """``item`` without its junk (None: all of it is junk); a carried block keeps its
    label and the sub-items that are not junk."""
    fixed = strip_template_prefix(item)
    if fixed != item:
        counts["template_prefix"] += 1
        item = fixed
    label = carried_label(item)
    if label is None:
        unit = _Unit(section, item, _is_exact(item), _error_of(item))
        return item if _keep(unit, seen, counts) else None
    head, *subs = item.split("\n")
    kept = [
        s
        for s in subs
        if s.strip()
        and _keep(
            _Unit(section, s.strip(), label in (1, 2), _body(s) if label == 1 else None),
            seen,
            counts,
        )
    ]
    return "\n".join([head, *kept]) if kept else None


def _keep(unit: _Unit, seen: _Seen, counts: Counter[str]) -> bool:
    reason = item_junk(unit.text, exact=unit.exact)
    if reason is None and seen.real_error and unit.error and is_error_noise(unit.error):
        reason = "error_noise"  # what find_junk lists, drop_junk drops
    if reason is None and not _nothing(unit.text):
        key = _key(unit.text)
        if key[1] and seen.holds(key):
            reason = "duplicate"
        elif key[1]:
            seen.add(key)
    if reason is None:
        return True
    counts[reason] += 1
    return False


def drop_junk(summary: Summary) -> tuple[Summary, Counter[str]]:
    """A copy of ``summary`` without the junk :func:`find_junk` lists, and how many lines
    went per reason (a template prefix is stripped, its item kept); ``summary`` itself
    when it holds none. Items are judged in order: of two duplicates the first stays
    (Goal before Critical Context)."""
    doc = summary.model_copy(deep=True)
    counts: Counter[str] = Counter()
    seen = _Seen(_has_real_error(_all_units(doc)))
    for key in ITEM_KEYS:
        _clean_list(doc, key, seen, counts)
    for block in (*doc.progress_other, *doc.other):
        _clean_block(block, seen, counts)
    counts = +counts
    return (doc if counts else summary), counts


def _kept_items(
    items: list[str], section: str, seen: _Seen, counts: Counter[str]
) -> dict[int, str]:
    """Index -> text of the items of one section that stay: no junk, placeholders only
    in a section with nothing else (one of them)."""
    real = any(not _nothing(item) for item in items)
    kept: dict[int, str] = {}
    placeholder = False
    for n, item in enumerate(items):
        if _nothing(item):
            if real or placeholder or item_junk(item) is not None:
                counts["placeholder"] += 1
            else:
                placeholder = True
                kept[n] = item
            continue
        cleaned = _clean_item(item, section, seen, counts)
        if cleaned is not None:
            kept[n] = cleaned
    return kept


def _clean_list(doc: Summary, key: ItemsKey, seen: _Seen, counts: Counter[str]) -> None:
    items = doc.items(key)
    if not items:
        return
    kept = _kept_items(items, key, seen, counts)
    drop_items(doc, key, lambda n, _item: n not in kept)  # the layout's headings move too
    doc.items(key)[:] = [kept[n] for n in sorted(kept)]


def _clean_block(block: Block, seen: _Seen, counts: Counter[str]) -> None:
    kept = _kept_items(block.items, block.title, seen, counts)
    block.items = [kept[n] for n in sorted(kept)]
