"""What may go into MEMORY.md: section titles, section content and the edited text, each
refused with a message saying what to change."""

from __future__ import annotations

import re

from copaw_context.core.errors import CopawContextError
from copaw_context.core.markdown_blocks import parse_blocks
from copaw_context.core.memory.instructions import SILENT
from copaw_context.core.memory.markdown import normalise_text, section_titles

__all__ = [
    "MAX_EDIT_BYTES",
    "MemoryFileError",
    "check_content",
    "check_edited",
    "check_memory_size",
    "check_memory_text",
    "check_proposal",
    "check_section_title",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MAX_TITLE_CHARS = 80
_MAX_SECTION_BYTES = 65536
MAX_EDIT_BYTES = 1 << 20
"""The largest MEMORY.md a section edit or a consolidation reads (its Markdown is parsed
whole, a few times: a 50 MB file took minutes and gigabytes); a larger one is refused."""


class MemoryFileError(CopawContextError):
    """A memory file operation was refused or failed; the message says what to change."""


def check_section_title(title: object) -> str:
    """The title stripped, or :class:`MemoryFileError` saying what a title may be."""
    if not isinstance(title, str) or not title.strip():
        raise MemoryFileError(
            "the section title is empty; give a short title such as 'Preferences'"
        )
    text = title.strip()
    if text.startswith("#"):
        text = text.lstrip("#").strip()
        if not text:
            raise MemoryFileError("the section title is only '#' characters; give a word")
    if _CONTROL.search(text):
        raise MemoryFileError("the section title must be one line without control characters")
    if len(text) > _MAX_TITLE_CHARS:
        raise MemoryFileError(
            f"the section title is over {_MAX_TITLE_CHARS} characters; shorten it"
        )
    if text.startswith(("/", "\\", "~")) or ".." in text or "\\" in text:
        raise MemoryFileError(
            "the section title looks like a path; it is a heading inside MEMORY.md, e.g. 'Tools'"
        )
    return text


def check_content(content: object, *, allow_empty: bool) -> str:
    if not isinstance(content, str):
        raise MemoryFileError(f"the content must be text, got {type(content).__name__}")
    text = normalise_text(content).strip("\n")
    if not text.strip() and not allow_empty:
        raise MemoryFileError("the content is empty; write what should be remembered")
    if len(text.encode("utf-8")) > _MAX_SECTION_BYTES:
        raise MemoryFileError(
            f"the content is over {_MAX_SECTION_BYTES} bytes; memory holds short, lasting facts"
        )
    blocks = parse_blocks(text)
    if blocks.unclosed_fence is not None:
        raise MemoryFileError(
            f"the content opens a code fence at its line {blocks.unclosed_fence + 1} that is "
            "never closed, which would hide the sections after it; close the fence"
        )
    for heading in blocks.headings:
        if heading.level <= 2:
            line = text.split("\n")[heading.row]
            raise MemoryFileError(
                f"the content has a '#' or '##' heading ({line.strip()[:40]!r}), which would start "
                "another section; use '###' inside a section, or edit each section separately"
            )
    return text


def check_memory_size(text: str, name: str) -> None:
    """Refuse to edit a MEMORY.md over :data:`MAX_EDIT_BYTES` (UTF-8)."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_EDIT_BYTES:
        raise MemoryFileError(
            f"{name} is {size} bytes, over the {MAX_EDIT_BYTES} an edit reads; memory holds "
            f"short, lasting facts: move old material out of {name} into a file of its own "
            f"(or write a new, shorter {name}), then edit again"
        )


def check_memory_text(text: str, name: str) -> None:
    """Refuse to edit a MEMORY.md too large to parse (:func:`check_memory_size`) or whose
    sections the parser cannot all see."""
    check_memory_size(text, name)
    unclosed = parse_blocks(text).unclosed_fence
    if unclosed is not None:
        raise MemoryFileError(
            f"{name} has a code fence opened at line {unclosed + 1} that is never closed; it "
            "hides every section after it, so the edit could not find them. Close the fence "
            f"(a line of ``` after the code) in {name}, then edit again"
        )


def check_edited(text: str, title: str) -> None:
    """The edited text must show section ``title`` exactly once."""
    folded = " ".join(title.split()).casefold()
    count = sum(1 for t in section_titles(text) if " ".join(t.split()).casefold() == folded)
    if count != 1:
        raise MemoryFileError(
            f"the edit would leave {count} sections titled {title!r} in MEMORY.md; nothing was "
            "written. Merge or rename the duplicate sections, then edit again"
        )


def check_proposal(reply: object, memory_text: str) -> tuple[str | None, str | None]:
    """A consolidation answer as the new MEMORY.md, or why it is refused (no text, empty,
    a section dropped, less than half as long)."""
    if not isinstance(reply, str):
        return None, f"the model returned {type(reply).__name__}, not text"
    text = normalise_text(reply).strip()
    if text.startswith("```"):
        lines = text.split("\n")[1:]
        if lines and lines[-1].strip().startswith("```"):
            lines = lines[:-1]
        text = "\n".join(lines).strip()
    if not text or text.upper() == SILENT:
        return None, "the model's answer was empty"
    kept = {title.casefold() for title in section_titles(text)}
    lost = [title for title in section_titles(memory_text) if title.casefold() not in kept]
    if lost:
        return None, f"the model's answer dropped section(s) {', '.join(map(repr, lost))}"
    old_size = len(memory_text.encode("utf-8"))
    if old_size > 1000 and len(text.encode("utf-8")) < old_size // 2:
        return None, "the model's answer is less than half as long as MEMORY.md (cut off?)"
    return text + "\n", None
