"""Telling a usable model reply from an empty one, an echo of the prompt or small talk."""

from __future__ import annotations

import re

from copaw_context.core.summary.language import (
    SECTION_KEYS,
    SECTION_TITLES,
    Language,
    check_language,
)
from copaw_context.core.summary.markdown import is_placeholder
from copaw_context.core.summary.message import split_summary_message
from copaw_context.core.summary.model import Summary
from copaw_context.core.summary.prompts import (
    DELIMITERS,
    INITIAL_LEAD,
    PLACEHOLDERS,
    RULES,
    UPDATE_LEAD,
)

__all__ = ["check_reply", "validate_summary"]

_ECHO_FINGERPRINTS = tuple(
    line.strip()
    for text in (*RULES["en"], *RULES["zh"], *INITIAL_LEAD.values(), *UPDATE_LEAD.values())
    for line in text.split("\n")[:1]
)


def _content_lines(summary: Summary) -> list[str]:
    """The non-blank lines under the section headings that are not subsection headings."""
    level = 2 if summary.layout is None else summary.layout.level
    subheading = re.compile("^" + "#" * (level + 1) + "(?!#)")
    lines = (line for item in summary.section_items() for line in item.split("\n"))
    return [line for line in lines if line.strip() and not subheading.match(line)]


def _has_content(summary: Summary) -> bool:
    lines = _content_lines(summary) if summary.has_headings() else summary.preamble
    return any(line.strip() and not is_placeholder(line) for line in lines)


def _echo(reply: str) -> str | None:
    """Why ``reply`` repeats the request instead of summarising it, if it does."""
    for marker in DELIMITERS:
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
    return None


def check_reply(
    reply: str, *, language: Language = "en", previous: Summary | None = None
) -> tuple[Summary | None, str | None]:
    """The model's ``reply`` parsed, or why it is not a usable summary: ``(summary, None)``
    or ``(None, reason)``. The reply is parsed once, after the cheap checks (empty, an echo
    of the prompt), and the parse is what the compactor goes on with.

    Headings are accepted in either language whatever ``language`` is; ``language`` only
    picks the wording of the reason. When ``previous`` has content, a reply whose sections
    hold only placeholders such as "(none)" is rejected: it would erase it.
    """
    language = check_language(language)
    if not reply.strip():
        return None, "empty summary"
    echo = _echo(reply)
    if echo is not None:
        return None, echo
    summary = Summary.parse(reply, language)
    written = summary.written_sections()
    titles = SECTION_TITLES[language]
    missing = [title for key, title in zip(SECTION_KEYS, titles, strict=True) if key not in written]
    if missing:
        listed = ", ".join(f"## {title}" for title in missing)
        return None, f"missing sections: {listed}"
    content = _content_lines(summary)
    if not content:
        return None, "the sections are all empty"
    if (
        all(is_placeholder(line) for line in content)
        and previous is not None
        and _has_content(previous)
    ):
        return None, (
            "every section holds only a placeholder such as (none); accepting it would erase "
            "the previous summary"
        )
    return summary, None


def validate_summary(
    reply: str, *, language: Language = "en", previous_summary: str = ""
) -> str | None:
    """:func:`check_reply` for texts: None if ``reply`` is a usable summary, else the reason
    it is not (``previous_summary`` may be a rendered summary message)."""
    language = check_language(language)
    previous = Summary.parse(split_summary_message(previous_summary), language)
    return check_reply(reply, language=language, previous=previous)[1]
