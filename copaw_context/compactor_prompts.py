"""The compactor prompts under the reference's name (QwenPaw's ``compactor_prompts``).

They live in :mod:`copaw_context.core.summary.prompts`; this module only re-exports them.
"""

from __future__ import annotations

from copaw_context.core.summary.language import PROGRESS_SUBSECTIONS, SECTION_TITLES
from copaw_context.core.summary.prompts import (
    INITIAL_LEAD,
    LABELS,
    PLACEHOLDERS,
    RULES,
    SIZE_RETRY,
    SIZE_RULE,
    SYSTEM_PROMPTS,
    UPDATE_LEAD,
    build_compactor_request,
    compactor_system_prompt,
    render_transcript,
    size_retry_note,
)
from copaw_context.core.summary.validate import validate_summary

__all__ = [
    "INITIAL_LEAD",
    "LABELS",
    "PLACEHOLDERS",
    "PROGRESS_SUBSECTIONS",
    "RULES",
    "SECTION_TITLES",
    "SIZE_RETRY",
    "SIZE_RULE",
    "SYSTEM_PROMPTS",
    "UPDATE_LEAD",
    "build_compactor_request",
    "compactor_system_prompt",
    "render_transcript",
    "size_retry_note",
    "validate_summary",
]
