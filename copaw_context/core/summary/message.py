"""The message that stands for the compacted history: a guide to the dialog archive, the
summary, and a closing line; and recovering the bare summary from such a message."""

from __future__ import annotations

from collections.abc import Sequence

from copaw_context.core.summary.language import Language, check_language

__all__ = ["render_pointer_message", "render_summary_message", "split_summary_message"]

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


_RECALL = {
    "en": "To find something by its words (a name, an error, a decision), call "
    '`{tool}(query="...")`: it searches the archive, cut tool outputs, cleared summaries, the '
    "daily logs and MEMORY.md and names the file and line to read.",
    "zh": '要按关键词查找（名称、报错、决定），调用 `{tool}(query="...")`：它会搜索归档、'
    "被截断的工具输出、被清除的摘要、每日日志和 MEMORY.md，并给出要读取的文件和行号。",
}


def render_summary_message(
    summary: str,
    archive_files: Sequence[tuple[str, int]],
    *,
    language: Language = "en",
    recall_tool: str | None = None,
) -> str:
    """The message that replaces the compacted history: archive guide, summary, closing line.

    ``archive_files`` are the (relative path, line count) of the ``dialog/*.jsonl`` files;
    ``recall_tool`` names the search tool the guide mentions (none when ``None``);
    :func:`split_summary_message` recovers ``summary`` exactly.
    """
    language = check_language(language)
    guide = _archive_guide(archive_files, language)
    if recall_tool:
        guide += "\n" + _RECALL[language].format(tool=recall_tool)
    return (
        f"{_MESSAGE_TITLES[language]}\n\n{guide}\n{_SUMMARY_OPEN}{summary}"
        f"{_SUMMARY_CLOSE}\n{_CLOSINGS[language]}"
    )


_POINTERS: dict[Language, str] = {
    "en": "Earlier messages are archived in {where}; read them with `read_file`{recall}.",
    "zh": "早前消息已归档在 {where}；用 `read_file` 阅读{recall}。",
}
_POINTER_RECALL: dict[Language, str] = {
    "en": " or search them with `{tool}`",
    "zh": "或用 `{tool}` 搜索",
}


def render_pointer_message(
    summary: str,
    archive_files: Sequence[tuple[str, int]],
    *,
    language: Language = "en",
    recall_tool: str | None = None,
) -> str:
    """The smallest message standing for the compacted history, for a window with no room
    for the full guide: one line naming the newest archive file (``dialog/`` when none is
    listed) and how to read it, then the summary (possibly empty);
    :func:`split_summary_message` recovers ``summary`` exactly."""
    language = check_language(language)
    named = [p for p, _n in sorted(archive_files) if isinstance(p, str) and p.strip()]
    where = named[-1] if named else "dialog/"
    recall = _POINTER_RECALL[language].format(tool=recall_tool) if recall_tool else ""
    line = _POINTERS[language].format(where=where, recall=recall)
    return f"{_MESSAGE_TITLES[language]}\n{line}{_SUMMARY_OPEN}{summary}{_SUMMARY_CLOSE}"


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
