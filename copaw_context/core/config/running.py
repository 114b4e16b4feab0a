"""The copaw-context configuration: the ``running`` section of a QwenPaw ``agent.json``.

Two file shapes are accepted: QwenPaw's per-agent ``agent.json`` (a top-level ``"running"``
among many keys of QwenPaw's own, which are ignored) and the docs example
``{"agents": {"running": ...}}``. Every bad value raises one :class:`ConfigError` naming its
JSON path, the value and what is allowed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any, Self

from pydantic import Field, ModelWrapValidatorHandler, ValidationError, model_validator

from copaw_context.core.config._rules import (
    Int,
    NonEmptyStr,
    Section,
    WorkspaceDir,
    describe_error,
    unknown_keys,
)
from copaw_context.core.config.files import (
    leaf_paths,
    merge_over,
    overlay_beside,
    read_json_file,
    read_overlay,
)
from copaw_context.core.config.memory import (
    AutoMemorySearchConfig,
    MemoryConfig,
    RemeLightMemoryConfig,
    inherit_qwenpaw_memory,
    memory_warnings,
)
from copaw_context.core.config.sections import (
    EXEMPT_OLD_DEFAULT_BYTES,
    EXEMPT_RECENT_DEFAULT_BYTES,
    Backend,
    CompactorKind,
    ContextCompactConfig,
    Language,
    LightContextConfig,
    TokenCounterName,
    ToolResultPruningConfig,
)
from copaw_context.core.config.settings import Settings
from copaw_context.core.errors import ConfigError, json_text

__all__ = [
    "DEFAULT_WINDOW_TOKENS",
    "QWENPAW_2_LIGHT_KEYS",
    "EXEMPT_OLD_DEFAULT_BYTES",
    "EXEMPT_RECENT_DEFAULT_BYTES",
    "AutoMemorySearchConfig",
    "Backend",
    "CompactorKind",
    "ContextCompactConfig",
    "Language",
    "LightContextConfig",
    "MemoryConfig",
    "RemeLightMemoryConfig",
    "RunningConfig",
    "Settings",
    "TokenCounterName",
    "ToolResultPruningConfig",
    "aload_running_config",
    "load_running_config",
    "parse_running_config",
    "running_config_json_schema",
]

DEFAULT_WINDOW_TOKENS = 131072
"""The window assumed when neither agent.json nor the model states one."""

logger = logging.getLogger("copaw_context")

QWENPAW_2_LIGHT_KEYS = frozenset({"strategy", "scroll_config", "visual_compact_config"})
"""Keys QwenPaw 2.x writes into ``light_context_config`` for its own context managers
(``strategy``: ``"native"`` or ``"scroll"``); known, so not reported as typos, and ignored."""


_SHAPES = (
    'an agent.json needs either a top-level "running" object (QwenPaw\'s per-agent agent.json) '
    'or "agents": {"running": {...}} (the QwenPaw docs example)'
)


class RunningConfig(Section):
    """The ``running`` section of ``agent.json`` as far as context management is concerned."""

    max_input_length: Int = Field(
        131072,
        ge=1000,
        le=100_000_000,
        description="The context window in tokens. When the file sets it, it wins; when absent "
        "the model's own context_size is used at run time (this default is only what "
        "check-config shows without a model).",
    )
    context_manager_backend: Backend = Field(
        "light",
        description='"light" replaces AgentScope\'s built-in compression with copaw-context; '
        '"native" leaves AgentScope\'s built-in compression in charge.',
    )
    light_context_config: LightContextConfig = Field(default_factory=LightContextConfig)
    # QwenPaw's memory keys (QWENPAW_MEMORY_KEYS) are validated where the file writes them;
    # ``memory`` takes their values for the keys it does not set (_inherit_qwenpaw_memory).
    memory_manager_backend: NonEmptyStr = Field(
        "remelight",
        description="QwenPaw's memory backend. copaw-context implements the file-based "
        '"remelight" layout (MEMORY.md, daily logs); any other value is reported and that '
        "layout is used.",
    )
    daily_memory_dir: WorkspaceDir | None = Field(
        None, description="QwenPaw's name for memory.memory_dir; used unless that is set."
    )
    reme_light_memory_config: RemeLightMemoryConfig = Field(default_factory=RemeLightMemoryConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)

    @model_validator(mode="wrap")
    @classmethod
    def _inherit_qwenpaw_memory(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Validate the section as written (a bad value is reported where the file has it),
        then build it with ``memory`` resolved from QwenPaw's keys: nothing changes a model
        once built."""
        config = handler(data)
        memory = inherit_qwenpaw_memory(config, config.memory)
        return config if memory is config.memory else config.model_copy(update={"memory": memory})

    @property
    def max_input_length_is_set(self) -> bool:
        """Whether the file sets ``max_input_length``; if not, the model's context size rules."""
        return "max_input_length" in self.model_fields_set

    def settings(self) -> Settings:
        """The resolved settings the steps read, flat and frozen (built anew each call)."""
        return Settings.resolve(
            is_light=self.context_manager_backend == "light",
            max_input_length=self.max_input_length,
            max_input_length_is_set=self.max_input_length_is_set,
            light=self.light_context_config,
            memory=self.memory,
        )

    def window_for(self, context_size: object) -> tuple[int, str]:
        """The window in tokens for a model stating ``context_size`` and where it comes from:
        ``max_input_length`` when the file sets it, else the model's own size when it is a
        positive whole number, else :data:`DEFAULT_WINDOW_TOKENS` (every host, one rule)."""
        if self.max_input_length_is_set:
            return self.max_input_length, "running.max_input_length"
        if (
            isinstance(context_size, int)
            and not isinstance(context_size, bool)
            and context_size > 0
        ):
            return context_size, "model.context_size"
        return DEFAULT_WINDOW_TOKENS, "the default (set running.max_input_length)"

    def compact_threshold_tokens(self, window: int | None = None) -> int:
        """Tokens at which compaction starts: ``int(window * compact_threshold_ratio)``."""
        ratio = self.light_context_config.context_compact_config.compact_threshold_ratio
        return int(self._window(window) * ratio)

    def reserve_tokens(self, window: int | None = None) -> int:
        """Newest tokens kept verbatim: ``int(window * reserve_threshold_ratio)``.

        Capped one token below the threshold, so it stays below it even for tiny windows.
        """
        size = self._window(window)
        ratio = self.light_context_config.context_compact_config.reserve_threshold_ratio
        return max(0, min(int(size * ratio), self.compact_threshold_tokens(size) - 1))

    def _window(self, window: int | None) -> int:
        if window is None:
            return self.max_input_length
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ValueError(f"window must be a positive whole number of tokens, got {window!r}")
        return window


def _brief(value: object) -> object:
    text = json_text(value)
    return value if len(text) <= 80 else f"{text[:77]}..."


def parse_running_config(data: Any, source: str | None = None) -> RunningConfig:
    """Validate an already-parsed agent.json object; ``source`` names the file in errors."""
    if not isinstance(data, Mapping):
        raise ConfigError("(top level)", _brief(data), f"must be a JSON object: {_SHAPES}", source)
    agents = data.get("agents")
    nested = agents if isinstance(agents, Mapping) and "running" in agents else None
    if "running" in data and nested is not None:
        allowed = f"{_SHAPES}, not both; remove one"
        raise ConfigError("(top level)", ["running", "agents.running"], allowed, source)
    if "running" in data:
        prefix, running = "running", data["running"]
    elif nested is not None:
        prefix, running = "agents.running", nested["running"]
    else:
        keys = sorted(map(str, data))
        shown = keys if len(keys) <= 12 else [*keys[:12], f"... {len(keys) - 12} more"]
        raise ConfigError("(top level) keys", shown, f"{_SHAPES}; neither is present", source)
    if not isinstance(running, Mapping):
        allowed = "must be a JSON object holding the settings (an empty {} means all defaults)"
        raise ConfigError(prefix, _brief(running), allowed, source)
    light = running.get("light_context_config")
    if isinstance(light, Mapping):
        light = {k: v for k, v in light.items() if k not in QWENPAW_2_LIGHT_KEYS}
    unknown = unknown_keys(LightContextConfig, light, f"{prefix}.light_context_config")
    if unknown:
        logger.warning(
            "%s: ignoring keys copaw-context does not know (newer QwenPaw versions add some, "
            "but check for typos): %s",
            source or "agent.json",
            "; ".join(unknown),
        )
    for warning in memory_warnings(running, prefix):
        logger.warning("%s: %s", source or "agent.json", warning)
    running = _inherit_agent_language(data, running)
    try:
        return RunningConfig.model_validate(running)
    except ValidationError as error:
        path, value, allowed, conflict = describe_error(error, RunningConfig, prefix, running)
        raise ConfigError(path, value, allowed, source, conflict=conflict) from None


def _inherit_agent_language(data: Mapping[str, Any], running: Mapping[str, Any]) -> Any:
    """Use QwenPaw's top-level ``"language": "zh"`` when the context config sets none."""
    light = running.get("light_context_config")
    language = data.get("language")
    if language not in ("en", "zh") or (isinstance(light, Mapping) and "language" in light):
        return running
    if light is not None and not isinstance(light, Mapping):
        return running  # let validation report the bad light_context_config
    return {**running, "light_context_config": {**(light or {}), "language": language}}


def load_running_config(path: str | os.PathLike[str], *, beside: bool = True) -> RunningConfig:
    """Read and validate a whole agent.json file (either accepted shape), with the
    ``copaw-context.json`` in its folder merged over its ``running`` section (unless
    ``beside`` is False; see :mod:`copaw_context.core.config.files`). An error in a value
    that file sets names that file."""
    source = str(path)
    data = read_json_file(path)
    overlay_path = overlay_beside(path)
    overlay = read_overlay(overlay_path) if beside else None
    if not overlay or not isinstance(data, Mapping):
        return parse_running_config(data, source)
    data, prefix = _merged(data, overlay)
    try:
        return parse_running_config(data, source)
    except ConfigError as error:
        where = error.conflict[0] if error.conflict else error.path
        from_overlay = {prefix + leaf for leaf in leaf_paths(overlay)}
        if not any(where == p or where.startswith(f"{p}.") for p in from_overlay):
            raise
        raise ConfigError(
            error.path, error.value, error.allowed, str(overlay_path), conflict=error.conflict
        ) from None


def _merged(data: Mapping[str, Any], overlay: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """agent.json ``data`` with ``overlay`` merged over its running section, and the JSON
    path prefix of that section."""
    agents = data.get("agents")
    if "running" not in data and isinstance(agents, Mapping) and "running" in agents:
        running = agents["running"]
        merged = merge_over(running, overlay) if isinstance(running, Mapping) else running
        return {**data, "agents": {**agents, "running": merged}}, "agents.running."
    running = data.get("running", {})
    merged = merge_over(running, overlay) if isinstance(running, Mapping) else running
    return {**data, "running": merged}, "running."


async def aload_running_config(path: str | os.PathLike[str]) -> RunningConfig:
    """:func:`load_running_config` off the event loop."""
    return await asyncio.to_thread(load_running_config, path)


_BOUND_KEYWORDS = {
    "ge": "minimum",
    "le": "maximum",
    "gt": "exclusiveMinimum",
    "lt": "exclusiveMaximum",
}


def _json_schema_bounds(node: Any) -> Any:
    """``node`` with pydantic's ``ge``/``le``/``gt``/``lt`` (left as they are where a bound sits
    inside an ``X | None`` member) written as the JSON Schema keywords validators enforce."""
    if isinstance(node, list):
        return [_json_schema_bounds(item) for item in node]
    if not isinstance(node, dict):
        return node
    numeric = node.get("type") in ("integer", "number")
    return {
        (_BOUND_KEYWORDS[key] if numeric and key in _BOUND_KEYWORDS else key): (
            _json_schema_bounds(value)
        )
        for key, value in node.items()
    }


def running_config_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a whole agent.json file, in both accepted shapes.

    Cross-field rules (e.g. reserve below threshold) cannot be expressed; the loader checks them.
    """
    running = _json_schema_bounds(RunningConfig.model_json_schema(ref_template="#/$defs/{model}"))
    definitions = running.pop("$defs")
    definitions["RunningConfig"] = running
    ref = {"$ref": "#/$defs/RunningConfig"}
    nested = {"type": "object", "required": ["running"], "properties": {"running": ref}}
    nested_present = {"required": ["agents"], "properties": {"agents": nested}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agent.json (copaw-context view)",
        "description": f"Context-management settings; {_SHAPES}. Other keys are QwenPaw's and "
        "are ignored. Cross-field rules (reserve below threshold, byte limits ordered, cache "
        "outside the dialog directory) are checked by `copaw-context check-config`.",
        "type": "object",
        "oneOf": [
            {
                "title": "QwenPaw per-agent agent.json",
                "required": ["running"],
                "properties": {"running": ref},
                "not": nested_present,
            },
            {
                "title": "QwenPaw docs example",
                "required": ["agents"],
                "properties": {"agents": nested},
                "not": {"required": ["running"]},
            },
        ],
        "$defs": definitions,
    }
