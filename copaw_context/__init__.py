"""copaw-context: CoPaw/QwenPaw "light" context management for AgentScope agents.

The framework-neutral core lives in :mod:`copaw_context.core`; the AgentScope 2.x
adapter in :mod:`copaw_context.agentscope2`. The names below are the public API.
"""

from __future__ import annotations

from copaw_context.agentscope2 import (
    AsMsgHandler,
    MemoryCompactionHook,
    attach,
    make_read_file_tool,
    pin_message,
)
from copaw_context.core.archive import DialogArchive
from copaw_context.core.config import (
    ContextCompactConfig,
    LightContextConfig,
    RunningConfig,
    ToolResultPruningConfig,
    load_running_config,
)
from copaw_context.core.errors import ArchiveError, CompactionError, ConfigError, CopawContextError
from copaw_context.core.events import ContextEvent
from copaw_context.core.file_reader import read_text_file
from copaw_context.core.offload import OffloadStore
from copaw_context.core.tokens import TokenCounter, make_token_counter
from copaw_context.core.truncation import (
    TRUNCATION_NOTICE_MARKER,
    parse_truncation_notice,
    truncate_text_output,
)

__version__ = "0.1.0"

__all__ = [
    "TRUNCATION_NOTICE_MARKER",
    "ArchiveError",
    "AsMsgHandler",
    "CompactionError",
    "ConfigError",
    "ContextCompactConfig",
    "ContextEvent",
    "CopawContextError",
    "DialogArchive",
    "LightContextConfig",
    "MemoryCompactionHook",
    "OffloadStore",
    "RunningConfig",
    "TokenCounter",
    "ToolResultPruningConfig",
    "attach",
    "load_running_config",
    "make_read_file_tool",
    "make_token_counter",
    "parse_truncation_notice",
    "pin_message",
    "read_text_file",
    "truncate_text_output",
]
