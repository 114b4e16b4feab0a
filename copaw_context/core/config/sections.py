"""The sections of ``running.light_context_config``: compaction, tool-result pruning, and
the light context manager's own settings (see :mod:`copaw_context.core.config.running`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from copaw_context.core.config._rules import (
    Bool,
    Extension,
    Float,
    Int,
    IntMin100,
    IntMin1000,
    NonEmptyStr,
    PostgresDsn,
    Section,
    WorkspaceDir,
    compared,
    dir_parts,
    rule_error,
)
from copaw_context.core.errors import json_text

__all__ = [
    "EXEMPT_OLD_DEFAULT_BYTES",
    "EXEMPT_RECENT_DEFAULT_BYTES",
    "Backend",
    "CompactorKind",
    "ContextCompactConfig",
    "Language",
    "LightContextConfig",
    "StoreConfig",
    "TokenCounterName",
    "ToolResultPruningConfig",
]

Backend = Literal["light", "native"]
TokenCounterName = Literal["auto", "estimate", "qwen", "o200k_base", "cl100k_base"]
Language = Literal["en", "zh"]
CompactorKind = Literal["llm", "extractive"]

EXEMPT_RECENT_DEFAULT_BYTES = 102400
EXEMPT_OLD_DEFAULT_BYTES = 12000


class ContextCompactConfig(Section):
    """When to compact old messages into a summary, and how much to keep verbatim."""

    enabled: Bool = Field(
        True,
        description="Compact old messages into a summary when the context reaches the threshold.",
    )
    compact_threshold_ratio: Float = Field(
        0.8,
        ge=0.1,
        le=0.9,
        description="Compaction starts when the context reaches this share of the window "
        "(0.8 x 131072 = 104857 tokens).",
    )
    reserve_threshold_ratio: Float = Field(
        0.1,
        ge=0,
        le=0.3,
        description="Share of the window kept verbatim as the newest messages when compacting; "
        "must be below compact_threshold_ratio.",
    )
    compact_with_thinking_block: Bool = Field(
        True, description="Include the model's thinking blocks in the compactor's input."
    )

    @classmethod
    def cross_field_rules(cls, name: str, values: Mapping[str, Any]) -> list[str]:
        if name == "reserve_threshold_ratio":
            return [compared("below", "compact_threshold_ratio", values)]
        return []

    @model_validator(mode="after")
    def _reserve_below_threshold(self) -> Self:
        if not self.reserve_threshold_ratio < self.compact_threshold_ratio:
            raise self.broken("reserve_threshold_ratio", "compact_threshold_ratio")
        return self


class ToolResultPruningConfig(Section):
    """How large tool results are cut in the context and offloaded in full to files."""

    enabled: Bool = Field(
        True, description="Cut large tool results and offload the full text to tool_results_cache."
    )
    pruning_recent_n: Int = Field(
        2,
        ge=1,
        le=10,
        description="How many of the most recent tool-result blocks (not messages) count as "
        "recent and are cut at pruning_recent_msg_max_bytes; older ones at "
        "pruning_old_msg_max_bytes.",
    )
    pruning_old_msg_max_bytes: Int = Field(
        3000, ge=100, description="Bytes of an older tool result's text kept in the context."
    )
    pruning_recent_msg_max_bytes: Int = Field(
        50000,
        ge=1000,
        description="Bytes of a recent tool result's text kept in the context; also read_file's "
        "limit per call. Must be >= pruning_old_msg_max_bytes.",
    )
    pruning_batch_ratio: Float = Field(
        0.5,
        ge=0,
        le=1,
        description="Stage-2 re-cuts (results that left the pruning_recent_n newest, cut to "
        "pruning_old_msg_max_bytes) wait until together they would free this share of the "
        "window, or the input is over the compaction threshold (then they all run before the "
        "check, with the compaction if one follows): each re-cut changes the input from that "
        "result on, so one batch keeps a provider's prompt cache where one cut per step breaks "
        "it every step. 0 = each result is re-cut as soon as it is old and seen.",
    )
    offload_retention_days: Float = Field(
        5, gt=0, le=365, description="Days offloaded full tool results are kept before cleanup."
    )
    offload_manifest_retention_days: Float = Field(
        90,
        gt=0,
        le=3650,
        description="Days a session's reference manifest (tool_results_cache/.refs/<id>.json, "
        "the offload names its context still references) protects those files from the "
        "cleanups of other sessions sharing the workspace after the session's last turn; "
        "never less than offload_retention_days.",
    )
    tool_results_cache: WorkspaceDir = Field(
        "tool_result",
        description="Directory, relative to the workspace, holding offloaded full tool results. "
        "Files older than offload_retention_days are deleted, so it must not overlap dialog_path.",
    )
    exempt_file_extensions: list[Extension] = Field(
        [".md"],
        description='read_file results of files with these extensions (each starting with ".", '
        "case-insensitive) get the larger exempt limits.",
    )
    exempt_tool_names: list[NonEmptyStr] = Field(
        ["chat_with_agent"],
        description="Results of these tools get the larger exempt limits.",
    )
    exempt_recent_max_bytes: IntMin1000 | None = Field(
        None,
        description="Bytes of a recent exempt result kept in the context. null or absent (None, "
        f"the default) = max({EXEMPT_RECENT_DEFAULT_BYTES}, pruning_recent_msg_max_bytes); a set "
        "value must be >= pruning_recent_msg_max_bytes.",
    )
    exempt_old_max_bytes: IntMin100 | None = Field(
        None,
        description="Bytes of an older exempt result kept in the context. null or absent (None, "
        f"the default) = max({EXEMPT_OLD_DEFAULT_BYTES}, pruning_old_msg_max_bytes), at most "
        "the effective exempt_recent_max_bytes; a set value must be >= pruning_old_msg_max_bytes "
        "and <= the effective exempt_recent_max_bytes.",
    )

    @property
    def effective_exempt_recent_max_bytes(self) -> int:
        """The recent limit for exempt results: the set value, else the derived default."""
        if self.exempt_recent_max_bytes is not None:
            return self.exempt_recent_max_bytes
        return max(EXEMPT_RECENT_DEFAULT_BYTES, self.pruning_recent_msg_max_bytes)

    @property
    def effective_exempt_old_max_bytes(self) -> int:
        """The older-result limit for exempt results: the set value, else the derived default.

        The derived default never exceeds the effective recent limit (it would only do so
        when a user sets ``exempt_recent_max_bytes`` below 12000).
        """
        if self.exempt_old_max_bytes is not None:
            return self.exempt_old_max_bytes
        derived = max(EXEMPT_OLD_DEFAULT_BYTES, self.pruning_old_msg_max_bytes)
        return min(derived, self.effective_exempt_recent_max_bytes)

    @classmethod
    def cross_field_rules(cls, name: str, values: Mapping[str, Any]) -> list[str]:
        rules = {
            "pruning_recent_msg_max_bytes": [(">=", "pruning_old_msg_max_bytes")],
            "exempt_recent_max_bytes": [(">=", "pruning_recent_msg_max_bytes")],
            "exempt_old_max_bytes": [
                (">=", "pruning_old_msg_max_bytes"),
                ("<=", "exempt_recent_max_bytes"),
            ],
        }
        return [compared(word, other, values) for word, other in rules.get(name, [])]

    @model_validator(mode="after")
    def _byte_limits_ordered(self) -> Self:
        # Unset exempt limits are compared by their effective values, which keep every rule
        # by construction: only values the file sets can break one.
        values = {
            **self.__dict__,
            "exempt_recent_max_bytes": self.effective_exempt_recent_max_bytes,
            "exempt_old_max_bytes": self.effective_exempt_old_max_bytes,
        }
        recent, old = self.pruning_recent_msg_max_bytes, self.pruning_old_msg_max_bytes
        exempt_recent, exempt_old = (
            values["exempt_recent_max_bytes"],
            values["exempt_old_max_bytes"],
        )
        if recent < old:
            raise self.broken("pruning_recent_msg_max_bytes", "pruning_old_msg_max_bytes", values)
        if exempt_recent < recent:
            raise self.broken("exempt_recent_max_bytes", "pruning_recent_msg_max_bytes", values)
        if exempt_old < old:
            raise self.broken("exempt_old_max_bytes", "pruning_old_msg_max_bytes", values)
        if exempt_old > exempt_recent:
            raise self.broken("exempt_old_max_bytes", "exempt_recent_max_bytes", values)
        return self


class StoreConfig(Section):
    """Where the workspace's data is kept: its folder (the default) or one PostgreSQL
    database that several replicas of the agent share."""

    dsn: PostgresDsn | None = Field(
        None,
        description="A PostgreSQL URL (postgresql://user@host:5432/db) for the workspace "
        "store shared by replicas; null keeps every file in the workspace folder. The "
        "environment variable COPAW_CONTEXT_STORE, when set, wins. Needs the postgres extra "
        "(pip install 'copaw-context[postgres]').",
    )


class LightContextConfig(Section):
    """Settings of the light context manager."""

    dialog_path: WorkspaceDir = Field(
        "dialog",
        description="Directory, relative to the workspace, where compacted messages are archived "
        "verbatim as YYYY-MM-DD.jsonl files.",
    )
    token_count_estimate_divisor: Float = Field(
        4,
        ge=2,
        le=5,
        description="UTF-8 bytes per token assumed when tokens are estimated rather than counted.",
    )
    token_counter: TokenCounterName = Field(
        "auto",
        description='"auto" picks a tokenizer from the model name; "estimate" divides UTF-8 bytes '
        'by token_count_estimate_divisor; "qwen", "o200k_base" and "cl100k_base" count exactly '
        "with that tokenizer.",
    )
    language: Language = Field(
        "en",
        description="Language of the compactor prompts and of the summary guide (truncation "
        'notices stay in English). When unset, QwenPaw\'s top-level "language" is used.',
    )
    compactor: CompactorKind = Field(
        "llm",
        description='"llm" asks the model for a structured summary; "extractive" builds one '
        "offline from the messages, with no model call.",
    )
    compactor_timeout_seconds: Float = Field(
        120,
        gt=0,
        description="Seconds the compactor waits for progress: between two streamed chunks; "
        "for the first chunk (or a whole non-streamed reply) of a call up to 1000 tokens, "
        "proportionally more for larger calls. A call making no progress that long has failed.",
    )
    compactor_retries: Int = Field(
        1, ge=0, le=3, description="Extra attempts after a failed compactor call."
    )
    compactor_failure_limit: Int = Field(
        3,
        ge=1,
        le=100,
        description="After this many automatic compactions in a row whose compactor call "
        "failed, the compactor is paused (extractive summaries) for a few compactions; "
        "/compact still tries the model.",
    )
    compactor_pause_max_compactions: Int = Field(
        32,
        ge=1,
        le=1000,
        description="The longest pause of a failing compactor, in compactions: the pause "
        "starts at 2 (1 when this is 1) and doubles after each failed retry, up to this; a "
        "success ends it.",
    )
    recompact_growth_ratio: Float = Field(
        0.05,
        ge=0,
        le=0.5,
        description="After a compaction that did not free enough room, the compactor is not called "
        "again until the context has grown by this share of the window.",
    )
    show_status: Bool = Field(
        False,
        description="Show a short status line in the chat before and after each automatic "
        "compaction (tokens before -> after, messages archived and kept, whether the "
        "extractive fallback was used), like QwenPaw's compaction messages. Off for library "
        "use, where the same facts arrive as events (the copaw_context logger and on_event); "
        "copaw-context chat turns it on.",
    )
    extra_read_roots: list[NonEmptyStr] = Field(
        [],
        description="Directories besides the workspace that read_file may read "
        "(absolute, or relative to the workspace).",
    )
    context_compact_config: ContextCompactConfig = Field(default_factory=ContextCompactConfig)
    tool_result_pruning_config: ToolResultPruningConfig = Field(
        default_factory=ToolResultPruningConfig
    )
    store: StoreConfig = Field(default_factory=StoreConfig)

    @model_validator(mode="after")
    def _check_cache_outside_dialog(self) -> Self:
        cache = self.tool_result_pruning_config.tool_results_cache
        cache_parts, dialog_parts = dir_parts(cache), dir_parts(self.dialog_path)
        shorter = min(len(cache_parts), len(dialog_parts))
        if cache_parts[:shorter] == dialog_parts[:shorter]:
            rule = (
                f"must not be dialog_path ({json_text(self.dialog_path)}), inside it or around "
                "it: old "
                "files in the tool-result cache are deleted, which would delete the dialog archive"
            )
            raise rule_error(
                rule,
                field="tool_result_pruning_config.tool_results_cache",
                value=cache,
                other="dialog_path",
            )
        return self
