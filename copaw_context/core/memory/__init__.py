"""Long-term memory and recall, host-neutral (no AgentScope import anywhere in it).

- :mod:`.files`: ``MEMORY.md`` (legacy ``Memory.md``) and the daily logs ``memory/YYYY-MM-DD.md``,
  in QwenPaw's layout, with locked, atomic writes and dated backups.
- :mod:`.tools`: ``memory_append_log``, ``memory_edit`` and ``memory_search`` as plain async
  functions returning text for the agent.
- :mod:`.summariser`: at each compaction, preferences and try-error lessons to today's log.
- :mod:`.consolidate` and :mod:`.scheduler`: recent daily logs folded into MEMORY.md on a cron
  schedule.
- :mod:`.search`: an SQLite FTS5 (trigram) index over everything that left the context:
  MEMORY.md, the logs, the dialog archive, the summaries ``/clear`` and ``/new`` removed
  (:mod:`.cleared`) and the saved full texts of cut tool outputs and user requests.
"""

from __future__ import annotations

from copaw_context.core.memory.cleared import keep_cleared_summary
from copaw_context.core.memory.consolidate import (
    ConsolidationResult,
    MemoryConsolidator,
    extractive_merge,
)
from copaw_context.core.memory.events import (
    MemoryEvent,
    MemoryEventCallback,
    MemoryEventKind,
    MemoryModel,
)
from copaw_context.core.memory.files import (
    LEGACY_MEMORY_FILE,
    MEMORY_FILE,
    MemoryFileError,
    MemoryFiles,
    render_memory_prompt,
)
from copaw_context.core.memory.scheduler import MemoryScheduler
from copaw_context.core.memory.search import (
    IndexStats,
    MemoryIndex,
    MemoryIndexError,
    SearchHit,
    fts5_trigram_available,
)
from copaw_context.core.memory.summariser import MemorySummariser
from copaw_context.core.memory.tools import MemoryTools, format_hits

__all__ = [
    "LEGACY_MEMORY_FILE",
    "MEMORY_FILE",
    "ConsolidationResult",
    "IndexStats",
    "MemoryConsolidator",
    "MemoryEvent",
    "MemoryEventCallback",
    "MemoryEventKind",
    "MemoryFileError",
    "MemoryFiles",
    "MemoryIndex",
    "MemoryIndexError",
    "MemoryModel",
    "MemoryScheduler",
    "MemorySummariser",
    "MemoryTools",
    "SearchHit",
    "extractive_merge",
    "format_hits",
    "fts5_trigram_available",
    "keep_cleared_summary",
    "render_memory_prompt",
]
