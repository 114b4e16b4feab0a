"""agent.json as copaw-context reads it inside QwenPaw.

The same file and the same rules as everywhere (``load_running_config``), with two
differences: copaw-context's own long-term memory is off (QwenPaw's memory manager keeps
MEMORY.md, the daily logs and ``memory_search``; two writers would summarise everything
twice), and so the warnings about QwenPaw's memory keys copaw-context would not use are not
logged: QwenPaw's memory manager uses them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from copaw_context.core.config.memory import memory_warnings
from copaw_context.core.config.running import RunningConfig, load_running_config

__all__ = ["QWENPAW_OFFLOAD_DIR", "load_qwenpaw_config", "qwenpaw_defaults", "without_own_memory"]

QWENPAW_OFFLOAD_DIR = "tool_results"
"""QwenPaw's default offload folder (``tool_results_cache``); ours elsewhere is ``tool_result``."""

logger = logging.getLogger("copaw_context")


def qwenpaw_defaults(config: RunningConfig) -> RunningConfig:
    """``config`` with QwenPaw's default offload folder where the file names none, so the
    agent's saved outputs stay where QwenPaw keeps them."""
    pruning = config.light_context_config.tool_result_pruning_config
    if "tool_results_cache" in pruning.model_fields_set:
        return config
    pruning = pruning.model_copy(update={"tool_results_cache": QWENPAW_OFFLOAD_DIR})
    light = config.light_context_config.model_copy(update={"tool_result_pruning_config": pruning})
    return config.model_copy(update={"light_context_config": light})


def without_own_memory(config: RunningConfig) -> RunningConfig:
    """``config`` with copaw-context's long-term memory off."""
    memory = config.memory.model_copy(update={"enabled": False})
    return config.model_copy(update={"memory": memory})


class _Without(logging.Filter):
    """Drops the log records that end with one of ``texts``."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__()
        self.texts = tuple(texts)

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.texts and record.getMessage().endswith(self.texts))


def _memory_warnings(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # load_running_config reports it
    running = data.get("running") if isinstance(data, dict) else None
    return memory_warnings(running, "running") if isinstance(running, dict) else []


def load_qwenpaw_config(path: Path) -> RunningConfig:
    """The settings of the QwenPaw agent.json at ``path`` (defaults when there is none);
    an invalid file raises ``ConfigError`` naming the key."""
    if not path.exists():
        return qwenpaw_defaults(without_own_memory(RunningConfig()))
    quiet = _Without(_memory_warnings(path))
    logger.addFilter(quiet)
    try:
        return qwenpaw_defaults(without_own_memory(load_running_config(path)))
    finally:
        logger.removeFilter(quiet)
