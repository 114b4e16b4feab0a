"""The summary subsystem: one :class:`Summary` model and its operations.

- :mod:`.model`: the Summary (six typed sections), parsed leniently and rendered as Markdown
- :mod:`.merge`: merging a previous and a new summary
"""

from __future__ import annotations

from copaw_context.core.summary.language import (
    LANGUAGES,
    PROGRESS_SUBSECTIONS,
    SECTION_TITLES,
    Language,
    check_language,
)
from copaw_context.core.summary.markdown import is_placeholder, section_index, subsection_index
from copaw_context.core.summary.merge import merge
from copaw_context.core.summary.model import Block, Summary

__all__ = [
    "LANGUAGES",
    "PROGRESS_SUBSECTIONS",
    "SECTION_TITLES",
    "Block",
    "Language",
    "Summary",
    "check_language",
    "is_placeholder",
    "merge",
    "section_index",
    "subsection_index",
]
