"""``Settings``: the resolved settings the pipeline steps read, flat and frozen.

``RunningConfig.settings()`` builds it from its validated sections (this module imports no
``RunningConfig``): one attribute per value, no ``light_context_config.*`` chains, derived
values resolved (the effective exempt limits, the inherited memory settings). Directories
stay relative to the workspace, as the file writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from copaw_context.core.config.memory import MemoryConfig
from copaw_context.core.config.sections import LightContextConfig

__all__ = ["Settings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What the steps read, resolved; field names are those of the config keys."""

    # the window and the backend
    is_light: bool
    max_input_length: int
    max_input_length_is_set: bool
    # compaction (context_compact_config) and the compactor
    compaction_enabled: bool
    compact_threshold_ratio: float
    reserve_threshold_ratio: float
    compact_with_thinking_block: bool
    compactor: Literal["llm", "extractive"]
    compactor_timeout_seconds: float
    compactor_retries: int
    compactor_failure_limit: int
    compactor_pause_max_compactions: int
    recompact_growth_ratio: float
    # language, tokens, status
    language: Literal["en", "zh"]
    token_counter: str
    token_count_estimate_divisor: float
    show_status: bool
    # tool results (tool_result_pruning_config)
    pruning_enabled: bool
    pruning_recent_n: int
    pruning_old_msg_max_bytes: int
    pruning_batch_ratio: float
    pruning_recent_msg_max_bytes: int
    exempt_recent_max_bytes: int
    exempt_old_max_bytes: int
    exempt_file_extensions: tuple[str, ...]
    exempt_tool_names: tuple[str, ...]
    offload_retention_days: float
    offload_manifest_retention_days: float
    # directories, relative to the workspace
    dialog_path: str
    tool_results_cache: str
    extra_read_roots: tuple[str, ...]
    memory_dir: str
    # the workspace store (store): a PostgreSQL DSN, None for the files
    store_dsn: str | None
    # long-term memory (running.memory, QwenPaw's keys resolved)
    memory_enabled: bool
    summarise_on_compact: bool
    memory_close_timeout_seconds: float
    memory_model_max_input_length: int | None
    consolidation_cron: str
    consolidate_days: int
    memory_prompt_max_bytes: int
    search_max_results: int

    @classmethod
    def resolve(
        cls,
        *,
        is_light: bool,
        max_input_length: int,
        max_input_length_is_set: bool,
        light: LightContextConfig,
        memory: MemoryConfig,
    ) -> Settings:
        """The resolved settings of a running section's values and validated sections."""
        compact = light.context_compact_config
        pruning = light.tool_result_pruning_config
        return cls(
            is_light=is_light,
            max_input_length=max_input_length,
            max_input_length_is_set=max_input_length_is_set,
            compaction_enabled=compact.enabled,
            compact_threshold_ratio=compact.compact_threshold_ratio,
            reserve_threshold_ratio=compact.reserve_threshold_ratio,
            compact_with_thinking_block=compact.compact_with_thinking_block,
            compactor=light.compactor,
            compactor_timeout_seconds=light.compactor_timeout_seconds,
            compactor_retries=light.compactor_retries,
            compactor_failure_limit=light.compactor_failure_limit,
            compactor_pause_max_compactions=light.compactor_pause_max_compactions,
            recompact_growth_ratio=light.recompact_growth_ratio,
            language=light.language,
            token_counter=light.token_counter,
            token_count_estimate_divisor=light.token_count_estimate_divisor,
            show_status=light.show_status,
            pruning_enabled=pruning.enabled,
            pruning_recent_n=pruning.pruning_recent_n,
            pruning_old_msg_max_bytes=pruning.pruning_old_msg_max_bytes,
            pruning_batch_ratio=pruning.pruning_batch_ratio,
            pruning_recent_msg_max_bytes=pruning.pruning_recent_msg_max_bytes,
            exempt_recent_max_bytes=pruning.effective_exempt_recent_max_bytes,
            exempt_old_max_bytes=pruning.effective_exempt_old_max_bytes,
            exempt_file_extensions=tuple(pruning.exempt_file_extensions),
            exempt_tool_names=tuple(pruning.exempt_tool_names),
            offload_retention_days=pruning.offload_retention_days,
            offload_manifest_retention_days=pruning.offload_manifest_retention_days,
            dialog_path=light.dialog_path,
            tool_results_cache=pruning.tool_results_cache,
            extra_read_roots=tuple(light.extra_read_roots),
            memory_dir=memory.memory_dir,
            store_dsn=light.store.dsn,
            memory_enabled=memory.enabled,
            summarise_on_compact=memory.summarise_on_compact,
            memory_close_timeout_seconds=memory.close_timeout_seconds,
            memory_model_max_input_length=memory.model_max_input_length,
            consolidation_cron=memory.consolidation_cron,
            consolidate_days=memory.consolidate_days,
            memory_prompt_max_bytes=memory.memory_prompt_max_bytes,
            search_max_results=memory.search_max_results,
        )
