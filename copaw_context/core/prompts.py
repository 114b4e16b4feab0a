"""Compactor prompts (English and Chinese), transcript rendering and summary validation.

The summary has six ``## `` sections (Goal, Constraints & Preferences, Progress with
Done / In Progress / Blocked, Key Decisions, Next Steps, Critical Context). The prompt's
template uses fixed placeholders and the request wraps its inputs in fixed delimiters, so
:func:`validate_summary` can tell a real summary from an echo of the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from copaw_context.core._prompt_text import (
    INITIAL_LEAD,
    LABELS,
    LANGUAGES,
    PLACEHOLDERS,
    PROGRESS_SUBSECTIONS,
    RULES,
    SECTION_TITLES,
    SIZE_RETRY,
    SIZE_RULE,
    SYSTEM_PROMPTS,
    UPDATE_LEAD,
    Language,
)
from copaw_context.core._summary_doc import (
    find_headings,
    is_placeholder,
    parse_sections,
    section_index,
    split_sections,
    subsection_index,
    unwrap_code_fence,
)
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = [
    "CONVERSATION_CLOSE",
    "CONVERSATION_OPEN",
    "LANGUAGES",
    "PROGRESS_SUBSECTIONS",
    "SECTION_TITLES",
    "Language",
    "build_compactor_request",
    "check_language",
    "compactor_system_prompt",
    "find_headings",
    "parse_sections",
    "render_summary_message",
    "render_transcript",
    "section_index",
    "size_retry_note",
    "split_summary_message",
    "subsection_index",
    "unwrap_code_fence",
    "validate_summary",
]

# Language-neutral delimiters around the inputs of a compactor request.
CONVERSATION_OPEN = "<<<CONVERSATION>>>"
CONVERSATION_CLOSE = "<<<END OF CONVERSATION>>>"
_PREVIOUS_OPEN = "<<<PREVIOUS SUMMARY>>>"
_PREVIOUS_CLOSE = "<<<END OF PREVIOUS SUMMARY>>>"
_NOTE_OPEN = "<<<USER NOTE>>>"
_NOTE_CLOSE = "<<<END OF USER NOTE>>>"
_DELIMITERS = (
    CONVERSATION_OPEN,
    CONVERSATION_CLOSE,
    _PREVIOUS_OPEN,
    _PREVIOUS_CLOSE,
    _NOTE_OPEN,
    _NOTE_CLOSE,
)


def check_language(language: object) -> Language:
    """Return ``language`` if supported, else raise ValueError naming the choices."""
    if language == "en" or language == "zh":
        return language
    raise ValueError(f"language: got {language!r}; use 'en' or 'zh'")


def compactor_system_prompt(language: Language) -> str:
    """The compactor's system prompt."""
    return SYSTEM_PROMPTS[check_language(language)]


def _template(language: Language) -> str:
    titles, subs, ph = (
        SECTION_TITLES[language],
        PROGRESS_SUBSECTIONS[language],
        PLACEHOLDERS[language],
    )
    return "\n".join(
        [
            f"## {titles[0]}",
            ph[0],
            "",
            f"## {titles[1]}",
            f"- {ph[1]}",
            "",
            f"## {titles[2]}",
            f"### {subs[0]}",
            f"- [x] {ph[2]}",
            f"### {subs[1]}",
            f"- [ ] {ph[3]}",
            f"### {subs[2]}",
            f"- {ph[4]}",
            "",
            f"## {titles[3]}",
            f"- {ph[5]}",
            "",
            f"## {titles[4]}",
            f"1. {ph[6]}",
            "",
            f"## {titles[5]}",
            f"- {ph[7]}",
        ]
    )


def _render_part(part: TranscriptPart, include_thinking: bool) -> str | None:
    name = part.tool_name or "tool"
    if part.kind == "text":
        return part.text
    if part.kind == "thinking":
        return f"[thinking]\n{part.text}" if include_thinking else None
    if part.kind == "tool_call":
        return f"[tool call] {name} input={part.text}"
    if part.kind == "tool_result":
        status = " (error)" if part.is_error else ""
        return f"[tool result] {name}{status} output:\n{part.text}"
    return f"[{part.kind}]\n{part.text}"


def render_transcript(
    messages: Sequence[TranscriptMessage], *, include_thinking: bool = True
) -> str:
    """Render messages whole, one header line each, for the compactor.

    Nothing is cut or flattened: late error lines and offload notices stay visible.
    """
    blocks: list[str] = []
    for message in messages:
        who = (
            message.role if message.name in ("", message.role) else f"{message.role} {message.name}"
        )
        header = f"[{message.timestamp}] {who}:" if message.timestamp else f"{who}:"
        parts = [_render_part(p, include_thinking) for p in message.parts]
        blocks.append("\n".join([header, *(p for p in parts if p is not None)]))
    return "\n\n".join(blocks)


def _fenced(opening: str, body: str, closing: str) -> str:
    # A body that contains our own delimiters (e.g. a read of an old request) must not
    # close the block early; the lookalike is marked so the model still sees the text.
    for marker in _DELIMITERS:
        body = body.replace(marker, marker.replace("<<<", "<<<(quoted) "))
    return f"{opening}\n{body}\n{closing}"


def build_compactor_request(
    transcript: str,
    *,
    previous_summary: str = "",
    extra_instruction: str = "",
    language: Language = "en",
    max_chars: int | None = None,
) -> str:
    """The compactor's user message: the delimited transcript, then the instruction.

    With a non-empty ``previous_summary`` the UPDATE instruction asks for one merged
    summary; ``extra_instruction`` (the /compact note) is appended as extra focus;
    ``max_chars`` adds the size limit to the rules.
    """
    language = check_language(language)
    if not transcript.strip():
        raise ValueError(
            "transcript is empty; pass the text of render_transcript(messages) for at least "
            "one message"
        )
    labels = LABELS[language]
    previous = split_summary_message(previous_summary).strip()
    chunks = [labels["conversation"], _fenced(CONVERSATION_OPEN, transcript, CONVERSATION_CLOSE)]
    if previous:
        chunks += [labels["previous"], _fenced(_PREVIOUS_OPEN, previous, _PREVIOUS_CLOSE)]
    chunks.append(UPDATE_LEAD[language] if previous else INITIAL_LEAD[language])
    chunks.append(_template(language))
    rules = list(RULES[language])
    if max_chars is not None:
        rules.append(SIZE_RULE[language].format(limit=max_chars))
    chunks.append("\n".join([labels["rules"], *(f"- {rule}" for rule in rules)]))
    if extra_instruction.strip():
        chunks += [labels["note"], _fenced(_NOTE_OPEN, extra_instruction.strip(), _NOTE_CLOSE)]
    return "\n\n".join(chunks)


def size_retry_note(got: int, limit: int, *, language: Language = "en") -> str:
    """What a retry adds to the request after a reply of ``got`` characters over ``limit``."""
    return SIZE_RETRY[check_language(language)].format(got=got, limit=limit)


# --------------------------------------------------------------------------- validation

_ECHO_FINGERPRINTS = tuple(
    line.strip()
    for text in (*RULES["en"], *RULES["zh"], *INITIAL_LEAD.values(), *UPDATE_LEAD.values())
    for line in text.split("\n")[:1]
)


def _content_lines(sections: Sequence[tuple[str, list[str]]], level: int) -> list[str]:
    """The non-blank body lines of ``sections`` that are not subsection headings."""
    lines = [line for _, body in sections for line in body if line.strip()]
    subheading = re.compile("^" + "#" * (level + 1) + "(?!#)")
    return [line for line in lines if not subheading.match(line)]


def _has_content(summary: str) -> bool:
    level, preamble, sections = split_sections(summary)
    lines = _content_lines(sections, level) if sections else preamble
    return any(line.strip() and not is_placeholder(line) for line in lines)


def validate_summary(
    reply: str, *, language: Language = "en", previous_summary: str = ""
) -> str | None:
    """Return None if ``reply`` is a usable summary, else the reason it is not.

    Headings are accepted in either language whatever ``language`` is; ``language`` only
    picks the wording of the reason. When ``previous_summary`` has content, a reply whose
    sections hold only placeholders such as "(none)" is rejected: it would erase it.
    """
    language = check_language(language)
    if not reply.strip():
        return "empty summary"
    for marker in _DELIMITERS:
        if marker in reply:
            return f"the reply repeats the request delimiter {marker}; it echoed its input"
    if len(re.findall(r"^\[tool (?:call|result)\] ", reply, flags=re.MULTILINE)) >= 2:
        return (
            "the reply copies transcript lines ([tool call]/[tool result]) instead of summarising"
        )
    for placeholder in (*PLACEHOLDERS["en"], *PLACEHOLDERS["zh"]):
        if placeholder in reply:
            return f"the reply echoes the template placeholder {placeholder!r}"
    for sentence in _ECHO_FINGERPRINTS:
        if sentence in reply:
            return f"the reply echoes the prompt's instructions ({sentence!r})"
    level, _, sections = split_sections(reply)
    found = {section_index(title) for title, _ in sections}
    missing = [SECTION_TITLES[language][i] for i in range(6) if i not in found]
    if missing:
        listed = ", ".join(f"## {title}" for title in missing)
        return f"missing sections: {listed}"
    content = _content_lines(sections, level)
    if not content:
        return "the sections are all empty"
    if all(is_placeholder(line) for line in content) and _has_content(
        split_summary_message(previous_summary)
    ):
        return (
            "every section holds only a placeholder such as (none); accepting it would erase "
            "the previous summary"
        )
    return None


# --------------------------------------------------------------------------- summary message

_SUMMARY_OPEN = "\n<summary>\n"
_SUMMARY_CLOSE = "\n</summary>\n"
_MESSAGE_TITLES: dict[Language, str] = {
    "en": "# Summary of the earlier conversation",
    "zh": "# 早前对话摘要",
}
_CLOSINGS: dict[Language, str] = {
    "en": "Use this summary as context to continue the conversation; do not redo finished work.",
    "zh": "请把以上摘要作为上下文继续对话，不要重复已经完成的工作。",
}
_TAIL_LINES = 50
_LEGACY_HEAD = "# Summary of previous conversation\n"
_LEGACY_OPEN = "Here is the summary:\n"
_LEGACY_CLOSE = "\nThe above is a summary of previous conversation"


def _archive_guide(archive_files: Sequence[tuple[str, int]], language: Language) -> str:
    seen: set[str] = set()
    for entry in archive_files:
        path, lines = entry
        if not isinstance(path, str) or not path.strip() or "\n" in path or "\r" in path:
            raise ValueError(f"archive_files: path {path!r} must be a non-empty single-line string")
        if isinstance(lines, bool) or not isinstance(lines, int) or lines < 0:
            raise ValueError(
                f"archive_files: line count {lines!r} for {path!r} must be an int >= 0"
            )
        if path in seen:
            raise ValueError(f"archive_files: {path!r} is listed twice; give each file once")
        seen.add(path)
    files = sorted(archive_files)
    zh = language == "zh"
    if not files:
        return (
            "被这份摘要替换的原始消息没有归档，摘要是它们唯一的记录。"
            if zh
            else "The raw messages this summary replaces were not archived; "
            "the summary is their only record."
        )
    head = (
        "被这份摘要替换的原始消息已归档在工作区中（JSON Lines，每行一条消息，按时间顺序）："
        if zh
        else "The raw messages this summary replaces are archived in the workspace "
        "(JSON Lines, one message per line, oldest first):"
    )
    listing = [f"- {p}（{n} 行）" if zh else f"- {p} ({n} lines)" for p, n in files]
    newest, total = next(((p, n) for p, n in reversed(files) if n > 0), files[-1])
    start = max(1, total - _TAIL_LINES + 1)
    if zh:
        how = (
            "需要确切细节（命令、报错、用户原话）时，用 `read_file` 阅读这些文件，"
            f"从末尾开始往前读：最新文件的最后 {_TAIL_LINES} 行可以这样读取："
            f'read_file(file_path="{newest}", start_line={start})，'
            "然后按需往前读更早的行和更早的文件。"
        )
    else:
        how = (
            "When you need an exact detail (a command, an error, the user's words), read these "
            "files with `read_file` from the END backwards: for the last "
            f'{_TAIL_LINES} lines of the newest file call read_file(file_path="{newest}", '
            f"start_line={start}), then move to earlier lines and earlier files as needed."
        )
    return "\n".join([head, *listing, how])


def render_summary_message(
    summary: str, archive_files: Sequence[tuple[str, int]], *, language: Language = "en"
) -> str:
    """The message that replaces the compacted history: archive guide, summary, closing line.

    ``archive_files`` are the (relative path, line count) of the ``dialog/*.jsonl`` files;
    :func:`split_summary_message` recovers ``summary`` exactly.
    """
    language = check_language(language)
    guide = _archive_guide(archive_files, language)
    return (
        f"{_MESSAGE_TITLES[language]}\n\n{guide}\n{_SUMMARY_OPEN}{summary}"
        f"{_SUMMARY_CLOSE}\n{_CLOSINGS[language]}"
    )


def split_summary_message(text: str) -> str:
    """The bare summary inside a rendered summary message; other text is returned unchanged.

    Also understands the reference implementation's summary message, so an old session's
    summary is merged rather than nested.
    """
    if any(text.startswith(title + "\n") for title in _MESSAGE_TITLES.values()):
        start = text.find(_SUMMARY_OPEN)
        end = text.rfind(_SUMMARY_CLOSE)
        if start != -1 and end >= start + len(_SUMMARY_OPEN):
            return text[start + len(_SUMMARY_OPEN) : end]
    if text.startswith(_LEGACY_HEAD) and _LEGACY_OPEN in text and _LEGACY_CLOSE in text:
        start = text.index(_LEGACY_OPEN) + len(_LEGACY_OPEN)
        end = text.rfind(_LEGACY_CLOSE)
        if end >= start:
            return text[start:end]
    return text
