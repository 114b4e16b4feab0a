"""``copaw-context check-config PATH``: validate an agent.json and show the effective settings."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from copaw_context.cli._all_settings import json_text, setting_rows
from copaw_context.core.config.files import (
    OVERLAY_NAME,
    leaf_paths,
    overlay_beside,
    read_json_file,
    read_overlay,
)
from copaw_context.core.config.inside_qwenpaw import qwenpaw2_warnings
from copaw_context.core.config.running import RunningConfig, load_running_config
from copaw_context.core.errors import ConfigError
from copaw_context.core.memory.search import MAX_OUTPUT_BYTES
from copaw_context.core.memory.service import memory_prompt_limit
from copaw_context.core.memory.summariser import memory_window
from copaw_context.core.memory.window import INPUT_SHARE, request_budget

__all__ = ["add_check_config"]

if TYPE_CHECKING:  # argparse has no public name for this type
    _Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


def add_check_config(subcommands: _Subcommands) -> None:
    parser = subcommands.add_parser(
        "check-config",
        help="validate an agent.json and show the effective context settings",
        description="Validate an agent.json (QwenPaw's per-agent file with a top-level "
        '"running", or {"agents": {"running": ...}}) and print the settings copaw-context '
        "will use, with the copaw-context.json beside it (settings QwenPaw does not rewrite) "
        "merged over it. Exits 2 when a file is invalid.",
    )
    parser.add_argument("path", metavar="PATH", help="the agent.json file to check")
    parser.set_defaults(handler=_run_check_config)


# Settings that only the light backend reads (compaction, the compactor, truncation and
# offload, token counting); with "native" AgentScope's own compression runs instead. What
# stays: the window (MEMORY.md's share of the prompt), read_file and its limits, the archive
# the chat commands write, and long-term memory.
_LIGHT_ONLY = (
    "light_context_config.token_count_estimate_divisor",
    "light_context_config.token_counter",
    "light_context_config.compactor",
    "light_context_config.recompact_growth_ratio",
    "light_context_config.show_status",
    "light_context_config.context_compact_config.",
    "light_context_config.tool_result_pruning_config.enabled",
    "light_context_config.tool_result_pruning_config.pruning_recent_n",
    "light_context_config.tool_result_pruning_config.pruning_old_msg_max_bytes",
    "light_context_config.tool_result_pruning_config.exempt_old_max_bytes",
    "light_context_config.tool_result_pruning_config.offload_",
)
_LIGHT_ONLY_ROWS = (
    "compaction",
    "compactor",
    "tool results",
    "exempt",
    "offload cache",
    "token counter",
)


def _run_check_config(args: argparse.Namespace) -> int:
    try:
        config = load_running_config(args.path)
    except ConfigError as error:
        print(f"copaw-context: error: {explain_config_error(error)}", file=sys.stderr)
        return 2
    warnings = limit_warnings(config)
    warnings += qwenpaw2_warnings(read_json_file(args.path), config.context_manager_backend)
    for warning in warnings:
        print(f"copaw-context: WARNING: {args.path}: {warning}", file=sys.stderr)
    light = config.context_manager_backend == "light"
    overlay_path = overlay_beside(args.path)
    overlay = set(leaf_paths(read_overlay(overlay_path) or {}))
    print(f"{args.path}: valid")
    if overlay:
        print(f"  merged with {overlay_path} (its values win)")
    for label, text in _summary(config):
        if light or label not in _LIGHT_ONLY_ROWS:
            print(f"  {label:<15} {text}")
    if overlay:
        print(
            f"  every setting (* = set in agent.json, + = set in {OVERLAY_NAME}, else the default):"
        )
    else:
        print("  every setting (* = set in the file, else the default):")
    skipped = 0
    for path, value, is_set in setting_rows(config):
        if not light and path.startswith(_LIGHT_ONLY):
            skipped += 1
            continue
        from_overlay = any(path == key or path.startswith(f"{key}.") for key in overlay)
        mark = "+" if from_overlay else "*" if is_set else " "
        print(f"    {mark} running.{path} = {value}")
    if skipped:
        print(
            f"  not shown: {skipped} settings of compaction, truncation and token counting, "
            'which apply only with context_manager_backend "light"'
        )
    return 0


def explain_config_error(error: ConfigError) -> str:
    """``error``'s message: values spelled as JSON (``NaN``, not ``nan``) and, when a rule
    between two keys fails, the key the file sets named first (the other is a default);
    :class:`ConfigError` words it so, for the CLI and a hook built in code alike."""
    return str(error)


def limit_warnings(config: RunningConfig) -> list[str]:
    """Limits that cannot fit the window: one tool result allowed more tokens than it holds."""
    if config.context_manager_backend != "light":
        return []
    light = config.light_context_config
    pruning = light.tool_result_pruning_config
    if not pruning.enabled:
        return []
    window = config.max_input_length
    divisor = light.token_count_estimate_divisor
    assumed = "" if config.max_input_length_is_set else " (assumed: max_input_length is not set)"
    warnings = []
    limits = [("pruning_recent_msg_max_bytes", pruning.pruning_recent_msg_max_bytes)]
    if pruning.exempt_file_extensions or pruning.exempt_tool_names:
        limits.append(("exempt_recent_max_bytes", pruning.effective_exempt_recent_max_bytes))
    for name, limit in limits:
        tokens = int(limit / divisor)
        if tokens > window:
            warnings.append(
                f"running.light_context_config.tool_result_pruning_config.{name} is {limit} "
                f"bytes, about {tokens} tokens (bytes / {divisor:g}), more than the "
                f"{window}-token window{assumed}: one tool result of that size cannot fit; "
                f"lower it, e.g. to {int(window * divisor / 4)} bytes (a quarter of the window)"
            )
    return warnings


def _summary(config: RunningConfig) -> list[tuple[str, str]]:
    """The effective settings as (label, text) rows."""
    light = config.light_context_config
    pruning = light.tool_result_pruning_config
    if config.context_manager_backend == "light":
        backend_text = "light: copaw-context replaces AgentScope's built-in compression"
    else:
        backend_text = "native: AgentScope's built-in compression stays in charge"
    cache = pruning.tool_results_cache.rstrip("/")
    divisor = f"{light.token_count_estimate_divisor:g}"
    counter_text = {
        "auto": f"auto: chosen from the model name (fallback estimate: UTF-8 bytes / {divisor})",
        "estimate": f"estimate: UTF-8 bytes / {divisor}",
    }.get(light.token_counter, f"{light.token_counter} tokenizer")
    return [
        ("backend", backend_text),
        *_compaction_summary(config),
        *_pruning_summary(config),
        ("offload cache", f"{cache}/ (files kept {pruning.offload_retention_days:g} days)"),
        ("dialog archive", f"{light.dialog_path.rstrip('/')}/"),
        ("token counter", counter_text),
        ("language", light.language),
        ("read roots", ", ".join(["workspace", *light.extra_read_roots])),
        *_memory_summary(config),
    ]


def _compaction_summary(config: RunningConfig) -> list[tuple[str, str]]:
    light = config.light_context_config
    compact = light.context_compact_config
    window = config.max_input_length
    if config.max_input_length_is_set:
        window_text = f"{window} tokens (max_input_length, set in the file)"
    else:
        window_text = (
            f"{window} tokens by default; max_input_length is not set, so the model's "
            "context size is used when known"
        )
    if compact.enabled:
        compaction_text = (
            f"compact at {config.compact_threshold_tokens()} tokens "
            f"({compact.compact_threshold_ratio:g} x {window}); keep newest "
            f"{config.reserve_tokens()} tokens ({compact.reserve_threshold_ratio:g} x {window}); "
            f"thinking blocks {'' if compact.compact_with_thinking_block else 'not '}summarised"
        )
    else:
        compaction_text = "off"
    retries = f"{light.compactor_retries} retr{'y' if light.compactor_retries == 1 else 'ies'}"
    compactor_text = (
        f"{light.compactor}, timeout {light.compactor_timeout_seconds:g} s, {retries}; "
        f"after {light.compactor_failure_limit} failed compaction(s) in a row, extractive "
        f"for {min(2, light.compactor_pause_max_compactions)} compaction(s), doubling up to "
        f"{light.compactor_pause_max_compactions} (a success or /compact ends the pause); "
        f"after a compaction that frees too little, wait for "
        f"{int(window * light.recompact_growth_ratio)} tokens of growth "
        f"({light.recompact_growth_ratio:g} x {window})"
    )
    return [("window", window_text), ("compaction", compaction_text), ("compactor", compactor_text)]


def _pruning_summary(config: RunningConfig) -> list[tuple[str, str]]:
    pruning = config.light_context_config.tool_result_pruning_config
    if pruning.enabled:
        pruning_text = (
            f"newest {pruning.pruning_recent_n} tool results keep "
            f"{pruning.pruning_recent_msg_max_bytes} bytes, older ones "
            f"{pruning.pruning_old_msg_max_bytes} bytes"
        )
    else:
        pruning_text = "off"
    exempt = [f"{extension} files" for extension in pruning.exempt_file_extensions]
    exempt += [f"tool {name}" for name in pruning.exempt_tool_names]
    exempt_text = (
        f"{', '.join(exempt) or 'nothing'}: "
        f"{pruning.effective_exempt_recent_max_bytes} bytes recent, "
        f"{pruning.effective_exempt_old_max_bytes} bytes old"
    )
    return [("tool results", pruning_text), ("exempt", exempt_text)]


def _memory_summary(config: RunningConfig) -> list[tuple[str, str]]:
    """The effective long-term memory settings as (label, text) rows, naming QwenPaw keys used."""
    memory = config.memory
    if not memory.enabled:
        return [("memory", "off (running.memory.enabled is false)")]
    inherited = memory.from_qwenpaw

    def origin(key: str) -> str:
        return f" (from running.{inherited[key]})" if key in inherited else ""

    folder = memory.memory_dir.rstrip("/")
    files_text = f"MEMORY.md (or legacy Memory.md) and {folder}/YYYY-MM-DD.md daily logs"
    files_text += origin("memory_dir")
    if config.memory_manager_backend != "remelight":
        files_text += (
            f"; memory_manager_backend {json_text(config.memory_manager_backend)} is not "
            "supported, these files are used instead"
        )
    if memory.summarise_on_compact:
        model = "the compactor's (the hook's compactor_model=, else the agent's own)"
        if memory.summariser_model is not None:
            ignored = json_text(memory.summariser_model)
            model += f"; summariser_model {ignored} is ignored (deprecated)"
        summary_text = (
            "after each compaction, /compact, /clear and /new, in "
            f"{config.light_context_config.language}; model: {model}; close() waits up to "
            f"{memory.close_timeout_seconds:g} s for them"
        )
    else:
        summary_text = "off"
    summary_text += origin("summarise_on_compact")
    days = memory.consolidate_days
    consolidation_text = (
        f'cron "{memory.consolidation_cron}" (local time) folds the {days} most recent daily '
        f"log{'s' if days > 1 else ''} into MEMORY.md (with a model when the adapter gives one, "
        "else extractive)"
    )
    consolidation_text += origin("consolidation_cron")
    light = config.light_context_config
    cache = light.tool_result_pruning_config.tool_results_cache.rstrip("/")
    search_text = (
        f"up to {memory.search_max_results} results over MEMORY.md, {folder}/, "
        f"{light.dialog_path.rstrip('/')}/ (with the summaries /clear and /new removed) and the "
        f"saved tool outputs in {cache}/ (the first {MAX_OUTPUT_BYTES // 1024} KiB of each); "
        f"index {folder}/.index.sqlite3"
    )
    search_text += origin("search_max_results")
    return [
        ("memory", files_text),
        ("memory summary", summary_text),
        ("memory model", _memory_model_text(config)),
        ("consolidation", consolidation_text),
        ("memory prompt", _memory_prompt_text(config)),
        ("memory search", search_text),
    ]


def _memory_model_text(config: RunningConfig) -> str:
    """The window of the summariser's and the consolidation's requests."""
    window = memory_window(config)
    share = f"{INPUT_SHARE:.0%}"
    if window is None:
        return (
            f"window: the model's own context size (memory.model_max_input_length and "
            f"max_input_length are not set); each request up to {share} of it"
        )
    source = (
        "memory.model_max_input_length"
        if config.memory.model_max_input_length is not None
        else "max_input_length"
    )
    return (
        f"window {window} tokens ({source}; the model's context size when smaller); each "
        f"request up to {request_budget(None, window)} tokens ({share}), larger input in parts"
    )


def _memory_prompt_text(config: RunningConfig) -> str:
    """The MEMORY.md share of the system prompt, as the runtime bounds it for the window."""
    most = config.memory.memory_prompt_max_bytes
    if not config.max_input_length_is_set:
        return (
            f"up to {most} bytes of MEMORY.md (less for a small model window: about "
            "0.4 bytes a token of it)"
        )
    window = config.max_input_length
    limit = memory_prompt_limit(config, window)
    if limit == most:
        return f"up to {most} bytes of MEMORY.md (memory_prompt_max_bytes)"
    return (
        f"up to {limit} bytes of MEMORY.md (memory_prompt_max_bytes {most}, lowered for the "
        f"{window}-token window)"
    )
