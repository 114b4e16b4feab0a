"""Junk lines out of a summary: template placeholders, stray "(none)" lines, a step listed as
both done and next, and absolute paths a model made up by joining a folder to a relative one.

Every removal is counted, so the engine can report how much a compactor's reply needed.
Items are compared in a normalised form (:func:`core`): case, spacing, punctuation,
Markdown emphasis, bullets and a polite lead-in ("Please", "Also", "请", "另外") aside.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from copaw_context.core.summary.carry import carried_label
from copaw_context.core.summary.facts import ExtractedFacts
from copaw_context.core.summary.language import LANGUAGES
from copaw_context.core.summary.markdown import BULLET_PREFIX_RE, is_placeholder
from copaw_context.core.summary.model import ITEM_KEYS, ItemsKey, Summary, items_key
from copaw_context.core.summary.prompts import PLACEHOLDERS
from copaw_context.core.summary.statements import has_reason

__all__ = [
    "clean_counts",
    "clean_summary",
    "core",
    "drop_items",
    "drop_stray_placeholders",
    "is_template_line",
    "restore_paths",
    "says_nothing",
    "settle_carried",
    "settle_counts",
]

_CHECKBOX_RE = re.compile(r"^\[[ xX]\]\s*")
_LEAD_IN_RE = re.compile(
    # an English lead-in is a whole word: "Sorting" keeps its "so"
    r"^(?:(?:(?:please|also|and|but|so|just|note|remember|important"
    r"|the user (?:said|wants|asked)(?: that| to)?|user(?: request)?)\b"
    r"|请|另外|还有|并且|而且|注意|记住|重要|用户(?:要求|说|希望))"
    r"\s*[:：,，]?\s*)+",
    re.IGNORECASE,
)
_NOT_WORD_RE = re.compile(r"[^\w\u3400-\u9fff]+")
_CJK_RUN_RE = re.compile(r"[\u3400-\u9fff]+")
_NOTHING_RE = re.compile(
    r"^(?:there (?:are|were|is|was) )?(?:no|nothing)\b[^.\n]{0,60}?"
    r"(?:\b(?:made|recorded|mentioned|stated|found|given|reported|yet|so far|here)\b"
    r"|\b(?:in|from|based on) (?:the|this) (?:conversation|transcript|dialog(?:ue)?)\b|$)"
    r"[^.\n]{0,40}\.?$"
    r"|^(?:暂无|尚无|没有|无)[^。\n]{0,20}(?:决定|决策|约束|错误|进展|内容|步骤|信息)?[。.]?$",
    re.IGNORECASE,
)
_ABOUT_CONSTRAINTS_RE = re.compile(
    r"\b(?:constraints?|preferences?|restrictions?|requirements?)\b|约束|偏好|限制|要求",
    re.IGNORECASE,
)
_TEMPLATE_RE = re.compile(r"^[<《【「\[]\s*[^<>]*[>》】」\]]$")
_ABS_PATH_RE = re.compile(r"(?<![\w.~-])(?:/[\w.@+-]+)+/[\w.@+-]+")
_REL_PATH_RE = re.compile(
    r"(?<![\w/.~-])(?:\.{1,2}/)?(?:[\w@+-][\w.@+-]*/)+[\w@+-][\w.@+-]*\.[A-Za-z0-9]{1,10}\b"
)


def _plain(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = BULLET_PREFIX_RE.sub("", text.strip(), count=1)
    return _CHECKBOX_RE.sub("", text).replace("`", "").replace("*", "").replace("_", " ")


def core(text: str) -> str:
    """``text`` compared by meaning-preserving form: case, spacing, punctuation, emphasis,
    bullets, checkboxes and a polite lead-in removed."""
    plain = _LEAD_IN_RE.sub("", _plain(text).casefold().strip())
    return " ".join(_NOT_WORD_RE.sub(" ", plain).split())


_TEMPLATE_CORES = frozenset(
    core(ph.strip("<>")) for language in LANGUAGES for ph in PLACEHOLDERS[language]
)


def is_template_line(item: str) -> bool:
    """Whether ``item`` is a template slot of the compactor prompt, in either language, with
    or without its angle brackets, or any bare ``<...>`` slot."""
    text = _plain(item).strip()
    key = core(text)
    if key and key in _TEMPLATE_CORES:
        return True
    return bool(_TEMPLATE_RE.match(text)) and "\n" not in text


def drop_items(summary: Summary, key: ItemsKey, drop: Callable[[int, str], bool]) -> int:
    """Remove the items of ``key`` for which ``drop(index, item)`` holds, in place, keeping
    the layout's heading positions right; the number removed."""
    items = summary.items(key)
    gone = [n for n, item in enumerate(items) if drop(n, item)]
    if not gone:
        return 0
    items[:] = [item for n, item in enumerate(items) if n not in set(gone)]
    if summary.layout is not None:
        for head_key, heads in summary.layout.headings.items():
            if items_key(head_key) != key:
                continue
            summary.layout.headings[head_key] = [
                h.model_copy(update={"start": h.start - sum(1 for n in gone if n < h.start)})
                for h in heads
            ]
    return len(gone)


def _all_keys(summary: Summary) -> Iterable[ItemsKey]:
    return (key for key in ITEM_KEYS if key != "preamble" and summary.items(key))


def says_nothing(item: str, section: str | None = None) -> bool:
    """A placeholder ("(none)", "无") or a sentence that only says a section is empty ("No
    decisions were made based on the conversation.", "暂无决定"). Under Constraints &
    Preferences (``section`` "constraints") a "No ..." item is a prohibition ("No
    force-push to main", "Nothing under /etc may be touched") unless it speaks of the
    constraints themselves ("No constraints were stated")."""
    if is_placeholder(item):
        return True
    text = _plain(item).strip()
    if not _NOTHING_RE.match(text):
        return False
    return section != "constraints" or bool(_ABOUT_CONSTRAINTS_RE.search(text))


def _nothing_in(section: str, _number: int, item: str) -> bool:
    return says_nothing(item, section)


def drop_stray_placeholders(summary: Summary) -> int:
    """Remove "(none)" items (and sentences that only say there is nothing) from sections
    that also hold real items; the number removed."""
    dropped = 0
    for key in _all_keys(summary):
        items = summary.items(key)
        if any(not says_nothing(item, key) for item in items):
            dropped += drop_items(summary, key, functools.partial(_nothing_in, key))
    for block in (*summary.progress_other, *summary.other):
        real = [item for item in block.items if not says_nothing(item)]
        if real and len(real) < len(block.items):
            dropped += len(block.items) - len(real)
            block.items = real
    return dropped


def _drop_templates(summary: Summary) -> int:
    dropped = sum(
        drop_items(summary, key, lambda _n, item: is_template_line(item))
        for key in _all_keys(summary)
    )
    for block in (*summary.progress_other, *summary.other):
        real = [item for item in block.items if not is_template_line(item)]
        dropped += len(block.items) - len(real)
        block.items = real
    return dropped


def _drop_done_steps(summary: Summary) -> int:
    """A Next Steps item that is also under Done is finished: it leaves Next Steps (a
    "(none)" under both says nothing was done)."""
    done = {core(item) for item in summary.done if not says_nothing(item)} - {""}
    return drop_items(summary, "next_steps", lambda _n, item: core(item) in done)


def restore_paths(item: str, transcript: str, known: Sequence[str]) -> str:
    """``item`` with each absolute path that the transcript never showed, but that ends with
    a relative path it did show, written back as it appeared there (the folder it was
    joined to is an invention when the transcript never showed it either)."""

    def fix(match: re.Match[str]) -> str:
        path = match.group(0)
        if path in transcript:
            return path
        for shown in known:
            bare = shown[2:] if shown.startswith("./") else shown
            if shown.startswith("/") or not path.endswith("/" + bare):
                continue
            folder = path[: -len(bare) - 1]
            if folder and folder not in transcript:
                return shown
        return path

    return _ABS_PATH_RE.sub(fix, item)


def _restore_all_paths(summary: Summary, transcript: str, known: Sequence[str]) -> int:
    """:func:`restore_paths` on every item; the paths the transcript shows are gathered
    (a scan of the whole transcript) only once an item names a path it never showed."""
    if not transcript:
        return 0
    shown: list[str] | None = None
    changed = 0
    for key in _all_keys(summary):
        items = summary.items(key)
        for n, item in enumerate(items):
            if all(m.group(0) in transcript for m in _ABS_PATH_RE.finditer(item)):
                continue  # every path it names was shown: nothing to restore
            if shown is None:
                found = set(known) | set(_REL_PATH_RE.findall(transcript))
                shown = sorted(found, key=len, reverse=True)
            if not shown:
                return 0
            fixed = restore_paths(item, transcript, shown)
            if fixed != item:
                items[n] = fixed
                changed += 1
    return changed


def clean_summary(
    summary: Summary, *, transcript: str = "", known_paths: Sequence[str] = ()
) -> tuple[Summary, int]:
    """A copy of ``summary`` without junk lines, and how many lines were dropped or fixed:
    template slots (either language, bracketed or not), "(none)" next to real items, Next
    Steps items already under Done, and made-up absolute paths (written back as the
    ``transcript`` showed them; ``known_paths`` are the paths its facts name)."""
    doc, counts = clean_counts(summary, transcript=transcript, known_paths=known_paths)
    return doc, sum(counts.values())


def clean_counts(
    summary: Summary, *, transcript: str = "", known_paths: Sequence[str] = ()
) -> tuple[Summary, Counter[str]]:
    """:func:`clean_summary` with the lines counted by reason: ``placeholder`` (template
    slots, stray "(none)"), ``duplicate`` (a Next Steps item already done), ``path_fixed``."""
    doc = summary.model_copy(deep=True)
    counts: Counter[str] = Counter()
    counts["placeholder"] += _drop_templates(doc)
    counts["duplicate"] += _drop_done_steps(doc)
    counts["path_fixed"] += _restore_all_paths(doc, transcript, known_paths)
    counts["placeholder"] += drop_stray_placeholders(doc)
    return doc, +counts


_STOPWORDS = frozenset(
    {
        *("the", "and", "for", "with", "must", "should", "please", "keep", "remain", "stay"),
        *("always", "every", "all", "any", "that", "this", "are", "was", "were", "has"),
        *("have", "been", "will", "can", "its", "also", "just", "you", "your", "our"),
    }
)


def _tokens(key: str) -> set[str]:
    """Content words of a normalised item (3+ characters, no stopwords, cut to 6 so
    "commit" and "committing" match) and Chinese character pairs."""
    words = {
        w[:6]
        for w in key.split()
        if len(w) >= 3 and w not in _STOPWORDS and not _CJK_RUN_RE.search(w)
    }
    for run in _CJK_RUN_RE.findall(key):
        words.update(run[n : n + 2] for n in range(max(1, len(run) - 1)))
    return words


def _covered(part: str, whole: str) -> bool:
    """Whether every content word of ``part`` (two at least) is in ``whole``: ``part`` says
    nothing ``whole`` does not (normalised items)."""
    mine = _tokens(part)
    return len(mine) >= 2 and mine <= _tokens(whole)


def _near(one: str, other: str) -> bool:
    """Whether two normalised items say the same: equal, one holding the other and the
    shorter at least half as long, or the content words of one all in the other and at
    least 60% of them ("Never edit files under src/" and "... under vendor/" differ)."""
    if not one or not other:
        return False
    short, long = sorted((one, other), key=len)
    if short == long or (short in long and 2 * len(short) >= len(long)):
        return True
    for part, whole in ((one, other), (other, one)):
        if _covered(part, whole) and 5 * len(_tokens(part)) >= 3 * len(_tokens(whole)):
            return True
    return False


def _bullet(item: str) -> str:
    match = BULLET_PREFIX_RE.match(item)
    return match.group(0).lstrip() if match else "- "


def _settle_constraints(doc: Summary) -> int:
    """Each carried constraint that the model had in other words takes the place of the
    model's item; it leaves the carried block (emptied blocks go)."""
    replaced = 0
    for n, item in enumerate(doc.critical):
        head, *subs = item.split("\n")
        if carried_label(item) != 0 or not all(re.match(r"\s+- \S", sub) for sub in subs):
            continue
        kept: list[str] = []
        for sub in subs:
            fact = sub.strip()[2:]
            target = next(
                (k for k, it in enumerate(doc.constraints) if _near(core(it), core(fact))), None
            )
            if target is None:
                kept.append(sub)
                continue
            doc.constraints[target] = _bullet(doc.constraints[target]) + fact
            replaced += 1
        doc.critical[n] = "\n".join([head, *kept]) if kept else ""
    drop_items(doc, "critical", lambda _n, item: item == "")
    return replaced


def _fill_constraints(doc: Summary) -> int:
    """When Constraints & Preferences holds nothing ("(none)", or no item), the user's
    carried constraints become its items (a "(none)" beside a constraint the user stated is
    junk); the placeholders they replace."""
    if not all(says_nothing(item, "constraints") for item in doc.constraints):
        return 0
    if doc.layout is not None and "constraints" not in doc.layout.headings:
        return 0
    at = next((n for n, item in enumerate(doc.critical) if _carried_constraints(item)), None)
    if at is None:
        return 0
    subs = doc.critical[at].split("\n")[1:]
    drop_items(doc, "critical", lambda n, _item: n == at)
    dropped = drop_items(doc, "constraints", lambda _n, _item: True)
    doc.constraints += [f"- {sub.strip()[2:]}" for sub in subs]
    return dropped


def _carried_constraints(item: str) -> bool:
    """Whether ``item`` is a carried Constraints block of one-line sub-items."""
    subs = item.split("\n")[1:]
    return carried_label(item) == 0 and bool(subs) and all(re.match(r"\s+- \S", s) for s in subs)


def _settle_decisions(doc: Summary, facts: ExtractedFacts) -> int:
    """The model's decision items that only say part of a carried decision (the choice
    without its reason, or the same in other words) are dropped: the carried one says it
    all, in the conversation's words."""
    reasoned = {core(d) for d in facts.decisions if has_reason(d)} - {""}
    present = [c for c in (core(item) for item in doc.decisions) if c in reasoned]

    def shorter(_n: int, item: str) -> bool:
        mine = core(item)
        if mine in reasoned or len(mine) < 8:
            return False
        return any(mine in fact or _covered(mine, fact) for fact in present)

    return drop_items(doc, "decisions", shorter)


def settle_carried(summary: Summary, facts: ExtractedFacts) -> tuple[Summary, int]:
    """A copy of a summary after the carry-over with near-duplicates resolved, and how many
    lines went: a carried constraint replaces the model's wording of it (the user's words
    stay, once), Constraints holding nothing take the carried constraints as their items,
    a carried decision with its reason replaces the model's reasonless one, and "(none)"
    lines left above carried items go."""
    doc, counts = settle_counts(summary, facts)
    return doc, sum(counts.values())


def settle_counts(summary: Summary, facts: ExtractedFacts) -> tuple[Summary, Counter[str]]:
    """:func:`settle_carried` with the lines counted by reason: ``reworded`` (the model's
    wording of a carried constraint, replaced by the user's), ``duplicate`` (a reasonless
    part of a carried decision), ``placeholder``."""
    doc = summary.model_copy(deep=True)
    counts: Counter[str] = Counter()
    counts["reworded"] += _settle_constraints(doc)
    counts["placeholder"] += _fill_constraints(doc)
    counts["duplicate"] += _settle_decisions(doc, facts)
    counts["placeholder"] += drop_stray_placeholders(doc)
    return doc, +counts
