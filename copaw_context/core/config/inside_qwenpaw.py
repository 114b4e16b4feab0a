"""agent.json as copaw-context reads it inside QwenPaw, and the QwenPaw settings it needs.

Inside QwenPaw the same file and the same rules apply (``load_running_config``: agent.json
with ``copaw-context.json`` merged over it), with two differences: copaw-context's own
long-term memory is off (QwenPaw's memory manager keeps MEMORY.md, the daily logs and
``memory_search``; two writers would summarise everything twice), and so the warnings about
QwenPaw's memory keys copaw-context would not use are not logged: QwenPaw's memory manager
uses them. The offload folder is the one QwenPaw writes into every agent.json
(``tool_result_pruning_config.tool_results_cache``: ``"tool_results"``), read from the file;
QwenPaw's default when the file names none.

QwenPaw 2.x runs an AgentScope middleware of a plugin only where its own settings let one
run: :func:`qwenpaw2_unused_reasons` says why, for given settings, copaw-context's middleware
would not run, or run only in part (``check-config`` and the QwenPaw 2.2 plugin both say it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from copaw_context.core.config.memory import memory_warnings
from copaw_context.core.config.running import RunningConfig, load_running_config
from copaw_context.core.errors import ConfigError

__all__ = [
    "QWENPAW2_NATIVE",
    "QWENPAW_OFFLOAD_DIR",
    "load_inside_qwenpaw",
    "load_inside_qwenpaw_or_defaults",
    "qwenpaw2_unused_reasons",
    "qwenpaw2_warnings",
    "qwenpaw_defaults",
    "without_own_memory",
]

logger = logging.getLogger("copaw_context")

QWENPAW2_NATIVE = "native"
"""The ``light_context_config.strategy`` under which QwenPaw 2.x runs a compression
middleware (its default is ``"scroll"``, its own retrieval-driven history)."""


QWENPAW_OFFLOAD_DIR = "tool_results"
"""QwenPaw's default offload folder (``tool_results_cache``); ours elsewhere is ``tool_result``."""


def qwenpaw_defaults(config: RunningConfig) -> RunningConfig:
    """``config`` with QwenPaw's default offload folder where the file names none (QwenPaw
    writes one into every agent.json; a hand-written file may not), so the agent's saved
    outputs stay where QwenPaw keeps them."""
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


def load_inside_qwenpaw(path: Path, *, beside: bool = True) -> RunningConfig:
    """The settings of the QwenPaw agent.json at ``path`` (and the ``copaw-context.json``
    beside it, unless ``beside`` is False), our memory off; defaults when there is no
    agent.json. An invalid file raises ``ConfigError`` naming the file and the key."""
    if not path.exists():
        return qwenpaw_defaults(without_own_memory(RunningConfig()))
    quiet = _Without(_memory_warnings(path))
    logger.addFilter(quiet)
    try:
        return qwenpaw_defaults(without_own_memory(load_running_config(path, beside=beside)))
    finally:
        logger.removeFilter(quiet)


def load_inside_qwenpaw_or_defaults(path: Path) -> tuple[RunningConfig, ConfigError | None]:
    """:func:`load_inside_qwenpaw`, and where a file is invalid the settings without it: an
    invalid ``copaw-context.json`` leaves agent.json's, an agent.json QwenPaw accepted but
    copaw-context does not leaves the defaults (QwenPaw's agent still answers); the error
    naming the file, the key and what it must be (``None`` when both files are valid)."""
    try:
        return load_inside_qwenpaw(path), None
    except ConfigError as error:
        first = error
    try:
        return load_inside_qwenpaw(path, beside=False), first
    except ConfigError:
        return qwenpaw_defaults(without_own_memory(RunningConfig())), first


def qwenpaw2_unused_reasons(
    strategy: object, compaction_enabled: object, backend: object = "light"
) -> tuple[list[str], list[str]]:
    """Why QwenPaw 2.x would not run copaw-context's middleware for these settings
    (``strategy``, ``context_compact_config.enabled``, our ``context_manager_backend``):
    ``(blocking, partial)``, texts naming the setting and the value to set. ``blocking``:
    the middleware is not used at all; ``partial``: it runs, but only in part."""
    blocking: list[str] = []
    partial: list[str] = []
    if strategy != QWENPAW2_NATIVE:
        blocking.append(
            f"running.light_context_config.strategy is {json.dumps(strategy)}: QwenPaw 2.x then "
            "runs its own context manager and no compression middleware; set it to "
            f'"{QWENPAW2_NATIVE}" for copaw-context'
        )
    if backend != "light":
        blocking.append(
            f"running.context_manager_backend is {json.dumps(backend)}: copaw-context leaves "
            'the context to AgentScope\'s built-in compression; set it to "light" (or remove it)'
        )
    if compaction_enabled is False:
        partial.append(
            "running.light_context_config.context_compact_config.enabled is false: QwenPaw 2.x "
            "then skips the compression step, so copaw-context only cuts fresh tool results "
            "(no compaction, no older results cut, no archive); set it to true"
        )
    return blocking, partial


def qwenpaw2_warnings(agent_json: Any, backend: str) -> list[str]:
    """What a QwenPaw 2.x agent.json (parsed; one whose ``running.light_context_config`` has
    QwenPaw 2.x's ``strategy``) would leave unused of copaw-context, whose
    ``context_manager_backend`` is ``backend``; ``[]`` for any other file (QwenPaw 1.x and
    plain AgentScope agents have no ``strategy``). QwenPaw reads its keys from agent.json
    alone (``copaw-context.json`` is ours)."""
    running = agent_json.get("running") if isinstance(agent_json, Mapping) else None
    light = running.get("light_context_config") if isinstance(running, Mapping) else None
    if not isinstance(light, Mapping) or "strategy" not in light:
        return []
    compact = light.get("context_compact_config")
    enabled = compact.get("enabled", True) if isinstance(compact, Mapping) else True
    blocking, partial = qwenpaw2_unused_reasons(light["strategy"], enabled, backend)
    return [*blocking, *partial]
