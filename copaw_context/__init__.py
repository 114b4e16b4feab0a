"""copaw-context: CoPaw/QwenPaw "light" context management for AgentScope agents.

The names below are what a user touches. Importing the package loads no AgentScope module:
the adapter names (``MemoryCompactionHook``, ``attach``, ``pin_message``, ...) resolve on
first use, for the AgentScope major that is installed. Everything else stays importable from
its own module (``copaw_context.core.*``, ``copaw_context.agentscope2``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from copaw_context._hosts import installed_agentscope_major
from copaw_context.core.config.running import (
    ContextCompactConfig,
    LightContextConfig,
    RunningConfig,
    ToolResultPruningConfig,
    load_running_config,
)
from copaw_context.core.errors import ArchiveError, ConfigError, CopawContextError
from copaw_context.core.events import CompactionRecord, ContextEvent

if TYPE_CHECKING:
    from copaw_context.agentscope2 import MemoryCompactionHook, attach, pin_message
    from copaw_context.core.engine import ContextEngine
    from copaw_context.testing import ScriptedChatModel

__version__ = "0.2.0"

__all__ = [
    "ArchiveError",
    "CompactionRecord",
    "ConfigError",
    "ContextCompactConfig",
    "ContextEngine",
    "ContextEvent",
    "CopawContextError",
    "LightContextConfig",
    "MemoryCompactionHook",
    "RunningConfig",
    "ScriptedChatModel",
    "ToolResultPruningConfig",
    "attach",
    "installed_agentscope_major",
    "load_running_config",
    "pin_message",
]

_ADAPTER_NAMES = ("MemoryCompactionHook", "attach", "pin_message")
_LAZY = {
    "ContextEngine": "copaw_context.core.engine",
    "ScriptedChatModel": "copaw_context.testing",
}


def _adapter_module() -> str:
    major = installed_agentscope_major()
    if major >= 2:
        return "copaw_context.agentscope2"
    return "copaw_context.agentscope1"


def __getattr__(name: str) -> Any:
    if name in _ADAPTER_NAMES:
        module = _adapter_module()
    elif name in _LAZY:
        module = _LAZY[name]
    else:
        raise AttributeError(f"module 'copaw_context' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_ADAPTER_NAMES, *_LAZY])
