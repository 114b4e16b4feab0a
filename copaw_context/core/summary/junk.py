"""Junk lines of a summary: what a reader should never meet, named by reason.

One rule set serves twice: :func:`find_junk` is the checker (it reads a rendered summary
and lists its junk lines; the quality recipe counts them), and :func:`drop_junk` removes the
same lines from a :class:`~.model.Summary` before it is rendered, so a summary the package
writes holds none of them by construction. The reasons:

- ``placeholder``: "(none)" or "No decisions were made." beside real items, a checkbox
  holding nothing ("- [ ] None", "- [ ] 无"), a template slot of the prompt (either language,
  with or without its brackets);
- ``template_prefix``: the template's ``decision - reason:``, or its word alone
  (``decision - Because ...``), written in front of an item (:func:`drop_junk` strips the
  prefix and keeps the item);
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
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from copaw_context.core.summary.carry import carried_label
from copaw_context.core.summary.clean import drop_items
from copaw_context.core.summary.error_block import is_error_noise
from copaw_context.core.summary.errors import rank_line
from copaw_context.core.summary.junk_items import (
    JUNK_REASONS,
    LABEL_RE,
    OUTCOME_RE,
    JunkReason,
    dedup_key,
    is_exact,
    item_junk,
    line_body,
    says_nothing,
    strip_template_prefix,
)
from copaw_context.core.summary.language import (
    WORDS,
    Language,
)
from copaw_context.core.summary.model import ITEM_KEYS, Block, ItemsKey, Summary

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


@dataclass(frozen=True)
class JunkLine:
    """A junk line of a summary: why, the section it is in and its text."""

    reason: JunkReason
    section: str
    line: str


class _Unit:
    """A line that is judged on its own: an item, or a sub-item of a carried block; with
    the error line it states, if it states one."""

    def __init__(self, section: str, text: str, exact: bool, error: str | None = None) -> None:
        self.section = section
        self.text = text
        self.exact = exact
        body = line_body(text)
        if error is None and section in _ERROR_SECTIONS and rank_line(body) is not None:
            error = body  # an error line (or a tally, a wrapper) listed as a Blocked item
        self.error = error


_ERROR_SECTIONS = frozenset({"blocked", "in_progress", "critical"})


@functools.lru_cache(maxsize=1 << 15)
def _error_of(line: str) -> str | None:
    """The error line an item states ("Error: X", "Last error seen: X", "tool: error — X")."""
    body = line_body(line)
    label = LABEL_RE.match(body)
    if label:
        word = label.group(0).rstrip(":： ").split(" (")[0]
        if word in {WORDS[lang][key] for lang in WORDS for key in ("error", "last_error")}:
            return body[label.end() :]
    outcome = OUTCOME_RE.match(body)
    if outcome and outcome.group("status") == "error":
        return outcome.group("detail")
    return None


def _units(section: str, item: str) -> Iterator[_Unit]:
    label = carried_label(item)
    if label is None:
        yield _Unit(section, item, is_exact(item), _error_of(item))
        return
    for sub in item.split("\n")[1:]:
        if sub.strip():
            text = sub.strip()
            yield _Unit(section, text, label in (1, 2), line_body(text) if label == 1 else None)


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
    if len(text) <= 20:  # a part is shorter than its text and 20 characters at least
        return []
    least = max(20, -(-4 * len(text) // 5))
    out: list[str] = []
    at = text.find(" ", least)
    while at != -1:
        out.append(text[:at])
        at = text.find(" ", at + 1)
    at = text.rfind(" ", 0, len(text) - least)  # a suffix after `at` is len-at-1 long
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
        real = any(not says_nothing(u.text, section) for u in units)
        placeholder = False
        for unit in units:
            reason = item_junk(unit.text, exact=unit.exact)
            if reason is None and real_error and unit.error and is_error_noise(unit.error):
                reason = "error_noise"
            if reason is None and says_nothing(unit.text, section):
                if real or placeholder:
                    reason = "placeholder"
                placeholder = True
            if reason is None and not says_nothing(unit.text, section):
                key = dedup_key(unit.text)
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
        unit = _Unit(section, item, is_exact(item), _error_of(item))
        return item if _keep(unit, seen, counts) else None
    head, *subs = item.split("\n")
    kept = [
        s
        for s in subs
        if s.strip()
        and _keep(
            _Unit(section, s.strip(), label in (1, 2), line_body(s) if label == 1 else None),
            seen,
            counts,
        )
    ]
    return "\n".join([head, *kept]) if kept else None


def _keep(unit: _Unit, seen: _Seen, counts: Counter[str]) -> bool:
    reason = item_junk(unit.text, exact=unit.exact)
    if reason is None and seen.real_error and unit.error and is_error_noise(unit.error):
        reason = "error_noise"  # what find_junk lists, drop_junk drops
    if reason is None and not says_nothing(unit.text, unit.section):
        key = dedup_key(unit.text)
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
    real = any(not says_nothing(item, section) for item in items)
    kept: dict[int, str] = {}
    placeholder = False
    for n, item in enumerate(items):
        if says_nothing(item, section):
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
