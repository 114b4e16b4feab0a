"""The long-term memory settings of ``agent.json``: our ``running.memory`` section and
QwenPaw's own keys for the same things.

The config package's running model re-exports its public names. QwenPaw writes
``running.daily_memory_dir``, ``running.memory_manager_backend`` and
``running.reme_light_memory_config``; :func:`inherit_qwenpaw_memory` copies the values they
set into ``running.memory`` (where a key of ``running.memory`` itself always wins), and
:func:`memory_warnings` reports what copaw-context cannot honour.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from croniter import croniter
from pydantic import AfterValidator, BaseModel, Field, PrivateAttr

from copaw_context.core.config._rules import (
    Bool,
    Float,
    Int,
    NonEmptyStr,
    Section,
    WorkspaceDir,
    rule_error,
    unknown_keys,
)
from copaw_context.core.errors import json_text

__all__ = [
    "DEFAULT_CONSOLIDATION_CRON",
    "QWENPAW_MEMORY_KEYS",
    "AutoMemorySearchConfig",
    "CronExpression",
    "MemoryConfig",
    "RemeLightMemoryConfig",
    "inherit_qwenpaw_memory",
    "memory_warnings",
]

DEFAULT_CONSOLIDATION_CRON = "0 0 * * *"
_CRON_RULE = (
    'must be a cron expression such as "0 0 * * *" (minute hour day-of-month month '
    "day-of-week, local time)"
)


def _check_cron(value: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise rule_error(f"{_CRON_RULE}; it is empty")
    try:
        valid = croniter.is_valid(text)
    except Exception:  # croniter raises assorted errors for odd input
        valid = False
    if not valid:
        raise rule_error(_CRON_RULE)
    return text


CronExpression = Annotated[str, Field(strict=True, min_length=1), AfterValidator(_check_cron)]


class MemoryConfig(Section):
    """Long-term memory: MEMORY.md, daily logs, the summariser, consolidation and recall."""

    enabled: Bool = Field(
        True,
        description="Long-term memory on/off: the memory tools, the summariser at compaction, "
        "the consolidation schedule and MEMORY.md in the system prompt.",
    )
    memory_dir: WorkspaceDir = Field(
        "memory",
        description="Directory, relative to the workspace, of the daily logs YYYY-MM-DD.md "
        "(MEMORY.md itself is in the workspace). QwenPaw's running.daily_memory_dir is used "
        "when this is not set.",
    )
    summarise_on_compact: Bool = Field(
        True,
        description="After each compaction, /compact, /clear and /new, ask a model for the user's "
        "preferences and try-error lessons in the removed messages and append them to today's "
        "log (in the background). QwenPaw's reme_light_memory_config.summarize_when_compact is "
        "used when this is not set.",
    )
    summariser_model: NonEmptyStr | None = Field(
        None,
        description="Deprecated and ignored (a warning names it): a model name alone cannot "
        "build a model (provider, credentials). The summariser and the consolidation use the "
        "compactor's model: the hook's compactor_model= when given, else the agent's own.",
    )
    close_timeout_seconds: Float = Field(
        30,
        ge=0,
        le=3600,
        description="Most seconds hook.close() (and so `async with hook:` and the chat's /exit) "
        "waits for the memory summaries still running, in all. Those still running then are "
        "stopped; their inputs stay in <memory_dir>/.pending/ and are summarised at the next "
        "start, so nothing is lost. 0 = do not wait.",
    )
    model_max_input_length: Int | None = Field(
        None,
        ge=1000,
        le=100_000_000,
        description="The context window in tokens of the model the summariser and the "
        "consolidation use; null (the default) = the agent's running.max_input_length when the "
        "file sets it, else that model's own context_size. Each request takes at most 60% of "
        "it (the rest is room for the answer); larger input is sent in parts.",
    )
    consolidation_cron: CronExpression = Field(
        DEFAULT_CONSOLIDATION_CRON,
        description="When recent daily logs are folded into MEMORY.md (cron, local time; "
        "default: every midnight). QwenPaw's reme_light_memory_config.dream_cron is used when "
        "this is not set.",
    )
    consolidate_days: Int = Field(
        7,
        ge=1,
        le=365,
        description="How many of the most recent daily logs a consolidation looks at (only the "
        "parts not folded yet are folded).",
    )
    memory_prompt_max_bytes: Int = Field(
        16000,
        ge=2000,
        le=1_000_000,
        description="Bytes of MEMORY.md (truncation notice included) put into the system "
        "prompt; a longer file is cut with a notice pointing at it. A small window lowers it "
        "to about a tenth of the window (0.4 bytes a token, at least 1000).",
    )
    search_max_results: Int = Field(
        5,
        ge=1,
        le=50,
        description="Most results memory_search returns. QwenPaw's "
        "reme_light_memory_config.auto_memory_search_config.max_results is used when this is "
        "not set.",
    )
    _inherited: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def from_qwenpaw(self) -> dict[str, str]:
        """The keys whose value came from QwenPaw's settings, each with that QwenPaw key's path
        under ``running``, e.g. ``{"consolidation_cron": "reme_light_memory_config.dream_cron"}``.
        """
        return dict(self._inherited)


class AutoMemorySearchConfig(Section):
    """QwenPaw's automatic memory search; copaw-context uses only ``max_results``."""

    enabled: Bool = Field(
        False,
        description="QwenPaw searches memory before every reply. Not implemented by "
        "copaw-context (true is reported); the agent calls memory_search itself.",
    )
    max_results: Int | None = Field(
        None, ge=1, le=50, description="Becomes memory.search_max_results unless that is set."
    )
    min_score: Float | None = Field(
        None,
        ge=0,
        le=1,
        description="QwenPaw's similarity cut-off; not used (copaw-context's search is "
        "full-text and ranks, it does not score against a threshold).",
    )


class RemeLightMemoryConfig(Section):
    """QwenPaw's ``reme_light_memory_config``, read so that a QwenPaw agent.json carries over."""

    summarize_when_compact: Bool | None = Field(
        None, description="Becomes memory.summarise_on_compact unless that is set."
    )
    dream_cron: CronExpression | None = Field(
        None, description="Becomes memory.consolidation_cron unless that is set."
    )
    auto_memory_interval: Int | None = Field(
        None,
        ge=1,
        description="QwenPaw summarises every N user messages. Not implemented by copaw-context "
        "(a number is reported): it summarises at compaction.",
    )
    auto_memory_search_config: AutoMemorySearchConfig = Field(
        default_factory=AutoMemorySearchConfig
    )


QWENPAW_MEMORY_KEYS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("daily_memory_dir",), "memory_dir"),
    (("reme_light_memory_config", "summarize_when_compact"), "summarise_on_compact"),
    (("reme_light_memory_config", "dream_cron"), "consolidation_cron"),
    (
        ("reme_light_memory_config", "auto_memory_search_config", "max_results"),
        "search_max_results",
    ),
)
"""The one map of QwenPaw's memory keys: (path under ``running`` of a QwenPaw key, the
``running.memory`` key it becomes). Inheriting, warning and ``from_qwenpaw`` all read it."""


def _lookup(running: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    value: Any = running
    for step in path:
        if not isinstance(value, Mapping) or step not in value:
            return False, None
        value = value[step]
    return value is not None, value


def inherit_qwenpaw_memory(running: BaseModel, memory: MemoryConfig) -> MemoryConfig:
    """``memory`` with the values of QwenPaw's keys in the validated ``running`` section for
    the keys the file does not set in ``memory`` (a new model; ``memory`` when none applies).

    The QwenPaw values were validated at their own paths already, with the same rules.
    """
    updates: dict[str, Any] = {}
    paths: dict[str, str] = {}
    for path, key in QWENPAW_MEMORY_KEYS:
        value: Any = running
        for step in path:
            value = getattr(value, step)
        if value is not None and key not in memory.model_fields_set:
            updates[key], paths[key] = value, ".".join(path)
    if not updates:
        return memory
    inherited = memory.model_copy(update=updates)
    inherited._inherited = paths  # a new model, not yet seen by anyone
    return inherited


def memory_warnings(running: Mapping[str, Any], prefix: str) -> list[str]:
    """What the file asks of long-term memory that copaw-context ignores, one text per item."""
    warnings: list[str] = []
    backend = running.get("memory_manager_backend")
    if backend is not None and backend != "remelight":
        warnings.append(
            f"{prefix}.memory_manager_backend is {json_text(backend)}: copaw-context implements "
            "only "
            'QwenPaw\'s file-based "remelight" memory (MEMORY.md and the daily logs in '
            f"{prefix}.memory.memory_dir) and uses it instead"
        )
    unknown = unknown_keys(MemoryConfig, running.get("memory"), f"{prefix}.memory")
    if unknown:
        warnings.append(
            "ignoring keys copaw-context does not know (check for typos): " + "; ".join(unknown)
        )
    reme = running.get("reme_light_memory_config")
    path = f"{prefix}.reme_light_memory_config"
    unknown = unknown_keys(RemeLightMemoryConfig, reme, path)
    if unknown:
        warnings.append(
            "ignoring QwenPaw memory settings copaw-context does not use (its memory search is "
            "full-text, without embeddings): " + "; ".join(unknown)
        )
    memory = running.get("memory")
    if isinstance(memory, Mapping) and memory.get("summariser_model") is not None:
        warnings.append(
            f"{prefix}.memory.summariser_model is deprecated and ignored: the memory summariser "
            "and the consolidation use the compactor's model. To use another model, pass it to "
            "the hook as compactor_model=; then remove the key"
        )
    for qwenpaw_path, key in QWENPAW_MEMORY_KEYS:
        found, value = _lookup(running, qwenpaw_path)
        if found and isinstance(memory, Mapping) and key in memory and memory[key] != value:
            warnings.append(
                f"{prefix}.{'.'.join(qwenpaw_path)} ({json_text(value)}) is overridden by "
                f"{prefix}.memory.{key} ({json_text(memory[key])})"
            )
    if not isinstance(reme, Mapping):
        return warnings
    if reme.get("auto_memory_interval") is not None:
        warnings.append(
            f"{path}.auto_memory_interval is not implemented by copaw-context: memory is "
            "summarised at each compaction, /compact, /clear and /new instead"
        )
    search = reme.get("auto_memory_search_config")
    if isinstance(search, Mapping) and search.get("enabled") is True:
        warnings.append(
            f"{path}.auto_memory_search_config.enabled is not implemented by copaw-context: "
            "nothing is searched before a reply; the agent calls the memory_search tool"
        )
    return warnings
