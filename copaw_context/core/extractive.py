"""Deterministic, LLM-free summarisation: fact extraction, verbatim carry-over and merging.

Used when the model summary fails or is disabled, and to make sure even a model summary
keeps the user's constraints, exact error lines and file paths word for word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from copaw_context.core.prompts import (
    PROGRESS_SUBSECTIONS,
    SECTION_TITLES,
    Language,
    check_language,
    find_headings,
    parse_sections,
    section_index,
    split_summary_message,
    subsection_index,
    unwrap_code_fence,
)
from copaw_context.core.transcript import TranscriptMessage

__all__ = [
    "ExtractedFacts",
    "carry_verbatim",
    "extract_facts",
    "extractive_summary",
    "merge_sections",
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
_NAMED_ERROR_RE = re.compile(
    r"\w(?:Error|Exception)\b|(?i:\b(?:error|fatal|panic):)|错误|失败|异常"
)
_PATH_LIKE_RE = re.compile(r"[/\\]|\.\w{1,10}$")  # a separator or a file extension
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])")
_BULLET_PREFIX_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)、])\s+")
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


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _cut(text: str, limit: int) -> str:
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
            sentence = _BULLET_PREFIX_RE.sub("", sentence).strip()
            if sentence:
                yield _cut(sentence, _MAX_SENTENCE_CHARS)


def _is_summary_message(message: TranscriptMessage) -> bool:
    text = message.text().strip()
    return bool(text) and split_summary_message(text) != text


def _user_texts(messages: Sequence[TranscriptMessage]) -> list[tuple[str, str]]:
    """(timestamp, text) of each user message, skipping injected summary messages."""
    out = []
    for message in messages:
        text = message.text().strip()
        if message.role == "user" and text and not _is_summary_message(message):
            out.append((message.timestamp, text))
    return out


def _first_line(text: str) -> str:
    for line in text.split("\n"):
        line = line.strip()
        if re.search(r"\w", line) and not line.startswith("<<<TRUNCATED>>>"):
            return _cut(line, 200)
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
    return _unique(found)


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
    return _unique(found)


def _error_lines(text: str) -> list[str]:
    # A very long line (minified JSON, a one-line log dump) is data that happens to contain
    # the word "error", not an error line worth carrying verbatim.
    return [
        line.strip()
        for line in text.split("\n")
        if len(line) <= _MAX_ERROR_LINE_CHARS and _ERROR_RE.search(line)
    ]


def _most_telling(lines: Sequence[str]) -> str:
    """The last line naming an exception or error message, else the last line."""
    named = [line for line in lines if _NAMED_ERROR_RE.search(line)]
    return (named or list(lines))[-1]


def extract_facts(messages: Sequence[TranscriptMessage]) -> ExtractedFacts:
    """Collect user requests, constraints, error lines, file paths and tool outcomes verbatim."""
    user = _user_texts(messages)
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
                    errors += _error_lines(part.text)
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
                    _EXIT_CODE_RE.search(x) or "Traceback (most recent" in x for x in lines
                )
                if failed and not lines:
                    lines = [_first_line(part.text)]
                errors += lines
                paths += _offload_paths(part.text)
                name = part.tool_name or "tool"
                target = call_targets.get(part.tool_call_id or "")
                label = f"{name}({target})" if target else name
                detail = _cut(_most_telling(lines), 200) if failed else _first_line(part.text)
                outcomes.append(f"{label}: {'error' if failed else 'ok'} — {detail}")
    return ExtractedFacts(
        user_requests=tuple(_cut(text, MAX_REQUEST_CHARS) for _, text in user),
        constraints=tuple(_unique(constraints)),
        error_lines=tuple(_unique(errors)[-MAX_ERROR_LINES:]),
        file_paths=tuple(_unique(paths)),
        tool_outcomes=tuple(outcomes),
        decisions=tuple(_unique(_cut(d, 300) for d in decisions)[-_MAX_DECISIONS:]),
    )


# --------------------------------------------------------------------------- carry


_CARRY_LABELS: dict[Language, tuple[str, str, str, str]] = {
    "en": ("Constraints (verbatim):", "Errors (verbatim):", "Files:", "Verbatim:"),
    "zh": ("约束（原文）：", "错误（原文）：", "文件：", "原文："),
}


def _carry_block(groups: Sequence[tuple[str, Sequence[str]]]) -> str:
    lines: list[str] = []
    for label, items in groups:
        if items:
            lines.append(f"- {label}")
            lines += [f"  - {item}" for item in items]
    return "\n".join(lines)


def carry_verbatim(summary: str, facts: ExtractedFacts, *, language: Language = "en") -> str:
    """Add every constraint, error line and file path missing from ``summary`` verbatim.

    They go under Critical Context (created if missing), grouped by label. Idempotent:
    an item already present anywhere in ``summary`` is not added again.
    """
    labels = _CARRY_LABELS[check_language(language)]
    every = (facts.constraints, facts.error_lines, facts.file_paths)
    groups: list[tuple[str, list[str]]] = []
    present = summary
    for label, items in zip(labels[:3], every, strict=True):
        missing = [item for item in _unique(items) if item not in present]
        present += "".join("\n" + item for item in missing)
        groups.append((label, missing))
    block = _carry_block(groups)
    if not block:
        return summary
    text = unwrap_code_fence(summary)
    lines = text.split("\n")
    headings = find_headings(lines)
    critical = [row for row, title in headings.items() if section_index(title) == 5]
    if critical:
        following = [row for row in headings if row > critical[0]]
        end = following[0] if following else len(lines)
        while end > critical[0] + 1 and not lines[end - 1].strip():
            end -= 1
        tail = lines[end:]
        if tail and tail[0].strip():
            tail = ["", *tail]
        result = "\n".join([*lines[:end], block, *tail])
    else:
        title = SECTION_TITLES[language][5]
        result = (
            f"{text.rstrip()}\n\n## {title}\n{block}\n"
            if text.strip()
            else f"## {title}\n{block}\n"
        )
    # Only multi-line items can be split by the insertion; appending never breaks anything.
    broken = [item for items in every for item in _unique(items) if item not in result]
    if broken:
        sep = "" if result.endswith("\n") else "\n"
        result += sep + _carry_block([(labels[3], broken)]) + "\n"
    return result


# --------------------------------------------------------------------------- merge

_NONE_KEYS = frozenset({"(none)", "none", "n/a", "无", "（无）", "(无)", "暂无", "-"})
_NONE_MARK: dict[Language, str] = {"en": "- (none)", "zh": "- （无）"}
_CHECKBOX_RE = re.compile(r"^\[[ xX]\]\s*")
_NUMBERED_RE = re.compile(r"^\d+[.)]\s")
_STARTS_ITEM_RE = re.compile(r"^(?:[-*+•]|\d+[.)])\s")
_FENCE_LINE_RE = re.compile(r"^\s*```")


@dataclass
class _Doc:
    """A summary as lists of items (a bullet with its continuation lines, or a paragraph)."""

    preamble: list[str]
    sections: list[list[str]]  # the six known sections; [2] holds Progress text outside ###
    progress: list[list[str]]  # Done, In Progress, Blocked
    progress_extra: list[tuple[str, list[str]]]
    extra: list[tuple[str, list[str]]]  # unknown ## sections, in order


def _items(lines: Sequence[str]) -> list[str]:
    items: list[list[str]] = []
    paragraph = False
    blanks = 0
    in_fence = False
    for line in lines:
        fence = bool(_FENCE_LINE_RE.match(line))
        if in_fence or (fence and items and not blanks):
            items[-1] += [""] * blanks + [line]
        elif not line.strip():
            blanks += 1
            continue
        elif items and (
            line[0] in " \t" or (paragraph and not blanks and not _STARTS_ITEM_RE.match(line))
        ):
            items[-1] += [""] * blanks + [line]
        else:
            items.append([line])
            paragraph = not _STARTS_ITEM_RE.match(line)
        in_fence = in_fence != fence
        blanks = 0
    return ["\n".join(item).rstrip() for item in items]


def _key(item: str) -> str:
    text = _CHECKBOX_RE.sub("", _BULLET_PREFIX_RE.sub("", item, count=1))
    return " ".join(text.split())


def _is_none(item: str) -> bool:
    return _key(item).casefold().strip("*_ ") in _NONE_KEYS


def _parse(text: str) -> _Doc:
    preamble, sections = parse_sections(text)
    doc = _Doc(_items(preamble), [[] for _ in range(6)], [[], [], []], [], [])
    for title, body in sections:
        index = section_index(title)
        if index is None:
            doc.extra.append((title.strip(), _items(body)))
            continue
        if index != 2:
            doc.sections[index] += _items(body)
            continue
        subheadings = find_headings(body, level=3)
        start = 0
        for row in [*sorted(subheadings), len(body)]:
            chunk = _items(body[start:row])
            if start == 0:
                doc.sections[2] += chunk
            else:
                sub = subsection_index(subheadings[start - 1])
                if sub is None:
                    doc.progress_extra.append((subheadings[start - 1].strip(), chunk))
                else:
                    doc.progress[sub] += chunk
            start = row + 1
    return doc


def _union(*lists: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in (item for items in lists for item in items):
        key = _key(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    real = [item for item in out if not _is_none(item)]
    return real if real else out[:1]


def _union_named(*groups: Sequence[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    merged: dict[str, list[str]] = {}
    for title, items in (entry for group in groups for entry in group):
        merged[title] = _union(merged.get(title, []), items)
    return list(merged.items())


def _merge(previous: _Doc, new: _Doc) -> _Doc:
    done = _union(previous.progress[0], new.progress[0])
    done_keys = {_key(item) for item in done}
    in_progress = [
        item
        for item in _union(previous.progress[1], new.progress[1])
        if _key(item) not in done_keys
    ]
    return _Doc(
        preamble=_union(previous.preamble, new.preamble),
        sections=[_union(a, b) for a, b in zip(previous.sections, new.sections, strict=True)],
        progress=[done, in_progress, _union(previous.progress[2], new.progress[2])],
        progress_extra=_union_named(previous.progress_extra, new.progress_extra),
        extra=_union_named(previous.extra, new.extra),
    )


def _block(items: Sequence[str], language: Language, *, numbered: bool = False) -> list[str]:
    if not items:
        return [_NONE_MARK[language]]
    lines: list[str] = []
    number = 0
    for item in items:
        paragraph = not _STARTS_ITEM_RE.match(item)
        if numbered and _NUMBERED_RE.match(item):
            number += 1
            item = _NUMBERED_RE.sub(f"{number}. ", item, count=1)
        if lines and (paragraph or not _STARTS_ITEM_RE.match(lines[-1].split("\n")[0])):
            lines.append("")
        lines.append(item)
    return lines


def _render(doc: _Doc, language: Language) -> str:
    titles, subs = SECTION_TITLES[language], PROGRESS_SUBSECTIONS[language]
    out: list[str] = []
    if doc.preamble:
        out += [*_block(doc.preamble, language), ""]
    for index, title in enumerate(titles):
        out.append(f"## {title}")
        if index == 2:
            if doc.sections[2]:
                out += _block(doc.sections[2], language)
            for sub, items in zip(subs, doc.progress, strict=True):
                out += [f"### {sub}", *_block(items, language)]
            for sub_title, items in doc.progress_extra:
                out += [f"### {sub_title}", *_block(items, language)]
        else:
            out += _block(doc.sections[index], language, numbered=index == 4)
        out.append("")
    for title, items in doc.extra:
        out += [f"## {title}", *_block(items, language), ""]
    return "\n".join(out)


def merge_sections(previous: str, new: str, *, language: Language = "en") -> str:
    """Merge two summaries section by section: items of ``previous`` first, then new ones.

    Duplicates are dropped, finished items leave In Progress, Next Steps are renumbered and
    unknown sections of either summary are kept at the end.
    """
    language = check_language(language)
    merged = _merge(_parse(split_summary_message(previous)), _parse(split_summary_message(new)))
    return _render(merged, language)


# --------------------------------------------------------------------------- extractive

_WORDS: dict[Language, dict[str, str]] = {
    "en": {
        "request": "User request",
        "latest": "Open user request",
        "continue": "Continue with the user request",
        "confirm": "Check that this user request was fully answered",
        "file": "File",
        "error": "Error",
        "last_error": "Last error seen",
        "note": "Compaction note from the user",
        "trimmed": "Older items were left out to fit the summary size limit; the full "
        "history is in the dialog archive.",
        "colon": ": ",
    },
    "zh": {
        "request": "用户请求",
        "latest": "未完成的用户请求",
        "continue": "继续处理用户请求",
        "confirm": "确认该用户请求已完整答复",
        "file": "文件",
        "error": "错误",
        "last_error": "最近出现的错误",
        "note": "用户的压缩说明",
        "trimmed": "为满足摘要长度上限，省略了部分较早的条目；完整历史见对话归档。",
        "colon": "：",
    },
}
MIN_SUMMARY_CHARS = 1000


def _labelled(label: str, timestamp: str, text: str, language: Language) -> str:
    when = f" ({timestamp})" if timestamp else ""
    lines = text.split("\n")
    if sum(1 for line in lines if _FENCE_LINE_RE.match(line)) % 2:
        lines.append("```")  # a cut inside a code block must not swallow later headings
    body = "\n".join([lines[0], *(f"  {line}" if line else "" for line in lines[1:])])
    return f"- {label}{when}{_WORDS[language]['colon']}{body}"


def _latest_answered(messages: Sequence[TranscriptMessage]) -> bool:
    rows = [i for i, m in enumerate(messages) if m.role == "user" and m.text().strip()]
    if not rows:
        return False
    later = [m for m in messages[rows[-1] + 1 :] if m.parts]
    final = later[-1] if later else None
    return (
        final is not None
        and final.role == "assistant"
        and bool(final.text().strip())
        and not any(p.kind == "tool_call" for p in final.parts)
    )


def _new_doc(
    messages: Sequence[TranscriptMessage],
    facts: ExtractedFacts,
    extra_instruction: str,
    language: Language,
) -> _Doc:
    words = _WORDS[language]
    user = [(ts, _cut(text, MAX_REQUEST_CHARS)) for ts, text in _user_texts(messages)]
    goal: list[str] = []
    in_progress: list[str] = []
    next_steps: list[str] = []
    if user:
        goal = _unique([_labelled(words["request"], *user[i], language) for i in (0, -1)])
        timestamp, latest = user[-1]
        line = _cut(_first_line(latest), 200)
        if _latest_answered(messages):
            next_steps.append("1." + _labelled(words["confirm"], timestamp, line, language)[1:])
        else:
            in_progress.append("- [ ]" + _labelled(words["latest"], timestamp, line, language)[1:])
            next_steps.append("1." + _labelled(words["continue"], timestamp, line, language)[1:])
    outcomes = [(o, o.split(": ", 1)[-1].startswith("error")) for o in facts.tool_outcomes]
    blocked = [f"- {o}" for o, failed in outcomes if failed]
    if not blocked and facts.error_lines:
        blocked = [f"- {words['last_error']}{words['colon']}{facts.error_lines[-1]}"]
    critical = [f"- {words['file']}{words['colon']}{p}" for p in facts.file_paths]
    critical += [f"- {words['error']}{words['colon']}{e}" for e in facts.error_lines]
    if extra_instruction.strip():
        note = _cut(" ".join(extra_instruction.split()), 800)
        critical.append(f"- {words['note']}{words['colon']}{note}")
    return _Doc(
        preamble=[],
        sections=[
            goal,
            [f"- {c}" for c in facts.constraints],
            [],
            [f"- {d}" for d in facts.decisions],
            next_steps,
            critical,
        ],
        progress=[[f"- [x] {o}" for o, failed in outcomes if not failed], in_progress, blocked],
        progress_extra=[],
        extra=[],
    )


def _trim(doc: _Doc, protected: set[str], language: Language, max_chars: int) -> None:
    """Drop the oldest unprotected items of the longest lists until the summary fits."""
    note = "- " + _WORDS[language]["trimmed"]
    carried = tuple(f"- {labels[0]}" for labels in _CARRY_LABELS.values())
    if len(_render(doc, language)) <= max_chars:
        return
    doc.sections[5] = _union(doc.sections[5], [note])
    protected = protected | {_key(note)}

    def droppable(item: str) -> bool:
        return _key(item) not in protected and not item.startswith(carried)

    size = len(_render(doc, language))
    while size > max_chars:
        lists = [doc.preamble, doc.sections[0], doc.sections[2], *doc.sections[3:], *doc.progress]
        lists += [items for _, items in (*doc.progress_extra, *doc.extra)]
        candidates = [items for items in lists if any(droppable(i) for i in items)]
        if not candidates:
            return  # only protected items are left: never drop them
        longest = max(candidates, key=lambda items: sum(len(i) + 1 for i in items))
        victim = next(i for i in longest if droppable(i))
        longest.remove(victim)
        size -= len(victim) + 1  # an estimate; re-rendered once it says the summary fits
        if size <= max_chars:
            size = len(_render(doc, language))


def extractive_summary(
    messages: Sequence[TranscriptMessage],
    *,
    previous_summary: str = "",
    extra_instruction: str = "",
    language: Language = "en",
    max_chars: int = 12000,
) -> str:
    """A six-section summary built from :func:`extract_facts`, merged into ``previous_summary``.

    Nothing of the previous summary is lost except, over ``max_chars``, its oldest
    non-essential items; constraints, the latest request and the Goal are never dropped.
    """
    language = check_language(language)
    if (
        isinstance(max_chars, bool)
        or not isinstance(max_chars, int)
        or max_chars < MIN_SUMMARY_CHARS
    ):
        raise ValueError(f"max_chars: got {max_chars!r}; use an int >= {MIN_SUMMARY_CHARS}")
    facts = extract_facts(messages)
    previous = _parse(split_summary_message(previous_summary))
    new = _new_doc(messages, facts, extra_instruction, language)
    merged = _parse(
        carry_verbatim(_render(_merge(previous, new), language), facts, language=language)
    )
    # Never dropped: constraints, the previous Goal and the latest request (last Goal item).
    protected = {_key(item) for item in (*merged.sections[1], *previous.sections[0])}
    protected.update(_key(item) for item in new.sections[0][-1:])
    _trim(merged, protected, language, max_chars)
    return _render(merged, language)
