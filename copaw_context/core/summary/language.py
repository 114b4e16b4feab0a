"""The fixed wording of a summary in English and Chinese: titles, placeholders, labels."""

from __future__ import annotations

import re
from typing import Literal

__all__ = [
    "CARRY_LABELS",
    "LANGUAGES",
    "NONE_MARK",
    "OMITTED_NOTE",
    "PROGRESS_KEYS",
    "PROGRESS_SUBSECTIONS",
    "SECTION_KEYS",
    "SECTION_TITLES",
    "WORDS",
    "Language",
    "ProgressKey",
    "SectionKey",
    "check_language",
    "word_pattern",
]

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")

SectionKey = Literal["goal", "constraints", "progress", "decisions", "next_steps", "critical"]
ProgressKey = Literal["done", "in_progress", "blocked"]
SECTION_KEYS: tuple[SectionKey, ...] = (
    "goal",
    "constraints",
    "progress",
    "decisions",
    "next_steps",
    "critical",
)
PROGRESS_KEYS: tuple[ProgressKey, ...] = ("done", "in_progress", "blocked")

SECTION_TITLES: dict[Language, tuple[str, ...]] = {
    "en": (
        "Goal",
        "Constraints & Preferences",
        "Progress",
        "Key Decisions",
        "Next Steps",
        "Critical Context",
    ),
    "zh": ("目标", "约束与偏好", "进展", "关键决策", "下一步", "关键上下文"),
}
PROGRESS_SUBSECTIONS: dict[Language, tuple[str, str, str]] = {
    "en": ("Done", "In Progress", "Blocked"),
    "zh": ("已完成", "进行中", "受阻"),
}

# What an empty section holds when a summary is rendered in the canonical layout.
NONE_MARK: dict[Language, str] = {"en": "- (none)", "zh": "- （无）"}

# Labels of the blocks the carry-over adds under Critical Context: constraints, errors,
# files, items that rendering could split, and files only read (the trim drops them first).
CARRY_LABELS: dict[Language, tuple[str, str, str, str, str]] = {
    "en": ("Constraints (verbatim):", "Errors (verbatim):", "Files:", "Verbatim:", "Files read:"),
    "zh": ("约束（原文）：", "错误（原文）：", "文件：", "原文：", "读取的文件："),
}

# The note under Critical Context when older error lines were left out. str.format(n=...)
OMITTED_NOTE: dict[Language, str] = {
    "en": "{n} older error lines were left out; the dialog archive has them.",
    "zh": "省略了 {n} 条较早的报错行，完整内容见对话归档。",
}

# The labels of the items the extractive summariser writes.
WORDS: dict[Language, dict[str, str]] = {
    "en": {
        "request": "User request",
        "latest": "Open user request",
        "continue": "Continue with the user request",
        "confirm": "Check that this user request was fully answered",
        "planned": "Planned next",
        "file": "File",
        "read_file": "File read",
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
        "planned": "计划的下一步",
        "file": "文件",
        "read_file": "读取的文件",
        "error": "错误",
        "last_error": "最近出现的错误",
        "note": "用户的压缩说明",
        "trimmed": "为满足摘要长度上限，省略了部分较早的条目；完整历史见对话归档。",
        "colon": "：",
    },
}


def check_language(language: object) -> Language:
    """Return ``language`` if supported, else raise ValueError naming the choices."""
    if language == "en" or language == "zh":
        return language
    raise ValueError(f"language: got {language!r}; use 'en' or 'zh'")


def word_pattern(key: str) -> str:
    """A regex alternation of the ``WORDS[...][key]`` label in both languages."""
    return "|".join(re.escape(WORDS[language][key]) for language in LANGUAGES)
