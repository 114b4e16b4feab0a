"""The summary subsystem: one :class:`Summary` model, its operations and the compactors.

- :mod:`.model`: the Summary (six typed sections), parsed leniently and rendered as Markdown
- :mod:`.merge`, :mod:`.carry`, :mod:`.fit`: merging, verbatim carry-over, budget fitting
- :mod:`.facts`, :mod:`.extractive`: facts of a transcript and the offline summariser;
  :mod:`.result_facts`: one tool result's facts, remembered by content; :mod:`.verbatim`:
  items each once, cut only with a note
- :mod:`.prompts`, :mod:`.validate`: the compactor's prompts and the check of its reply
- :mod:`.errors`, :mod:`.error_rules`, :mod:`.statements`: error lines by toolchain (guarded
  patterns); constraints, decisions, plans
- :mod:`.clean`: junk lines of a model's reply out, near-duplicates of carried items settled
- :mod:`.junk`: the junk checker (:func:`find_junk`) and the same rules applied by
  construction (:func:`drop_junk`); :mod:`.rules`: what each section may hold, checked
  against the conversation (:func:`enforce_rules`)
- :mod:`.budget`, :mod:`.deadline`: the one budget of a compaction and the call's timeout
- :mod:`.llm`, :mod:`.ask`: the LLM compactor, host-neutral behind :class:`CompactorModel`,
  and its retries
- :mod:`.message`: the message that puts a summary (and the archive guide) in the context
"""

from __future__ import annotations

from copaw_context.core.summary.budget import (
    SummaryBudget,
    carried_chars,
    plan_budget,
    summary_budget,
)
from copaw_context.core.summary.carry import (
    carry_facts,
    carry_verbatim,
    keep_previous,
    preserve_previous,
)
from copaw_context.core.summary.clean import clean_summary, settle_carried
from copaw_context.core.summary.deadline import ProgressCallback, call_timeout
from copaw_context.core.summary.errors import scan_errors
from copaw_context.core.summary.extractive import extractive, extractive_summary
from copaw_context.core.summary.facts import ExtractedFacts, extract_facts
from copaw_context.core.summary.fit import fit, fit_summary, fit_to_budget, trim
from copaw_context.core.summary.junk import (
    JUNK_REASONS,
    JunkLine,
    drop_junk,
    find_junk,
    junk_counts,
)
from copaw_context.core.summary.language import (
    LANGUAGES,
    PROGRESS_SUBSECTIONS,
    SECTION_TITLES,
    Language,
    check_language,
)
from copaw_context.core.summary.llm import (
    CompactorModel,
    CompactorResult,
    ProgressCompactorModel,
    SummaryCompactor,
)
from copaw_context.core.summary.markdown import is_placeholder, section_index, subsection_index
from copaw_context.core.summary.merge import merge
from copaw_context.core.summary.message import (
    render_pointer_message,
    render_summary_message,
    split_summary_message,
)
from copaw_context.core.summary.model import Block, Summary
from copaw_context.core.summary.prompts import (
    build_compactor_request,
    compactor_system_prompt,
    render_transcript,
    size_retry_note,
)
from copaw_context.core.summary.rules import enforce_rules
from copaw_context.core.summary.validate import check_reply, validate_summary

__all__ = [
    "JUNK_REASONS",
    "LANGUAGES",
    "PROGRESS_SUBSECTIONS",
    "SECTION_TITLES",
    "Block",
    "CompactorModel",
    "CompactorResult",
    "ExtractedFacts",
    "JunkLine",
    "Language",
    "ProgressCallback",
    "ProgressCompactorModel",
    "Summary",
    "SummaryBudget",
    "SummaryCompactor",
    "build_compactor_request",
    "call_timeout",
    "carried_chars",
    "carry_facts",
    "carry_verbatim",
    "check_language",
    "check_reply",
    "clean_summary",
    "compactor_system_prompt",
    "drop_junk",
    "enforce_rules",
    "extract_facts",
    "extractive",
    "extractive_summary",
    "find_junk",
    "fit",
    "fit_summary",
    "fit_to_budget",
    "is_placeholder",
    "junk_counts",
    "keep_previous",
    "merge",
    "plan_budget",
    "preserve_previous",
    "render_pointer_message",
    "render_summary_message",
    "render_transcript",
    "scan_errors",
    "section_index",
    "settle_carried",
    "size_retry_note",
    "split_summary_message",
    "subsection_index",
    "summary_budget",
    "trim",
    "validate_summary",
]
