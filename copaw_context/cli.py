"""The ``copaw-context`` command line.

Each subcommand is one ``_add_<name>(subcommands)`` function that registers its parser and sets
``handler`` to a ``_run_<name>(args) -> int`` function; list the adder in ``_SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from copaw_context import __version__
from copaw_context._memory_cli import add_memory
from copaw_context.core.config import RunningConfig, load_running_config
from copaw_context.core.errors import ConfigError

__all__ = ["main"]

if TYPE_CHECKING:  # argparse has no public name for this type
    _Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


def _add_check_config(subcommands: _Subcommands) -> None:
    parser = subcommands.add_parser(
        "check-config",
        help="validate an agent.json and show the effective context settings",
        description="Validate an agent.json (QwenPaw's per-agent file with a top-level "
        '"running", or {"agents": {"running": ...}}) and print the settings copaw-context '
        "will use. Exits 2 when the file is invalid.",
    )
    parser.add_argument("path", metavar="PATH", help="the agent.json file to check")
    parser.set_defaults(handler=_run_check_config)


def _run_check_config(args: argparse.Namespace) -> int:
    config = load_running_config(args.path)
    print(f"{args.path}: valid")
    for label, text in _summary(config):
        print(f"  {label:<15} {text}")
    return 0


def _summary(config: RunningConfig) -> list[tuple[str, str]]:
    """The effective settings as (label, text) rows."""
    light = config.light_context_config
    compact = light.context_compact_config
    pruning = light.tool_result_pruning_config
    window = config.max_input_length
    if config.max_input_length_is_set:
        window_text = f"{window} tokens (max_input_length, set in the file)"
    else:
        window_text = (
            f"{window} tokens by default; max_input_length is not set, so the model's "
            "context size is used when known"
        )
    if config.context_manager_backend == "light":
        backend_text = "light: copaw-context replaces AgentScope's built-in compression"
    else:
        backend_text = "native: AgentScope's built-in compression stays in charge"
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
        f"after a compaction that frees too little, wait for "
        f"{int(window * light.recompact_growth_ratio)} tokens of growth "
        f"({light.recompact_growth_ratio:g} x {window})"
    )
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
    cache = pruning.tool_results_cache.rstrip("/")
    divisor = f"{light.token_count_estimate_divisor:g}"
    counter_text = {
        "auto": f"auto: chosen from the model name (fallback estimate: UTF-8 bytes / {divisor})",
        "estimate": f"estimate: UTF-8 bytes / {divisor}",
    }.get(light.token_counter, f"{light.token_counter} tokenizer")
    return [
        ("backend", backend_text),
        ("window", window_text),
        ("compaction", compaction_text),
        ("compactor", compactor_text),
        ("tool results", pruning_text),
        ("exempt", exempt_text),
        ("offload cache", f"{cache}/ (files kept {pruning.offload_retention_days:g} days)"),
        ("dialog archive", f"{light.dialog_path.rstrip('/')}/"),
        ("token counter", counter_text),
        ("language", light.language),
        ("read roots", ", ".join(["workspace", *light.extra_read_roots])),
        *_memory_summary(config),
    ]


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
            f"; memory_manager_backend {config.memory_manager_backend!r} is not supported, "
            "these files are used instead"
        )
    if memory.summarise_on_compact:
        model = memory.summariser_model or "the adapter's model (usually the compactor's)"
        summary_text = (
            "after each compaction, /compact, /clear and /new, in "
            f"{config.light_context_config.language}; model: {model}"
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
    search_text = (
        f"up to {memory.search_max_results} results over MEMORY.md, {folder}/ and "
        f"{config.light_context_config.dialog_path.rstrip('/')}/; index {folder}/.index.sqlite3"
    )
    search_text += origin("search_max_results")
    return [
        ("memory", files_text),
        ("memory summary", summary_text),
        ("consolidation", consolidation_text),
        ("memory prompt", f"up to {memory.memory_prompt_max_bytes} bytes of MEMORY.md"),
        ("memory search", search_text),
    ]


def _add_demo(subcommands: _Subcommands) -> None:
    parser = subcommands.add_parser(
        "demo",
        help="run the offline demo: a long agent session with several compactions",
        description="Run a real AgentScope 2.x agent with MemoryCompactionHook through a long "
        "scripted session (HTML pages, build logs, a Chinese document, parallel tool calls) in a "
        "small window, fully offline. Prints a line per model call, then the compactions, the "
        "summary and the files written. With --model it uses a real OpenAI-compatible model.",
    )
    parser.add_argument("--steps", type=int, default=60, help="model calls to script (>= 2)")
    parser.add_argument(
        "--workspace",
        default="demo-workspace",
        help="folder for tool_result/ and dialog/ (emptied first; default: ./demo-workspace)",
    )
    parser.add_argument("--plot", metavar="FILE.png", help="draw context tokens per step")
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="an agent.json to use instead of the demo settings (configs/agent.demo.json)",
    )
    _add_model_options(parser, required=False)
    parser.set_defaults(handler=_run_demo)


def _add_model_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--model", required=required, help="model name of an OpenAI-compatible endpoint"
    )
    parser.add_argument(
        "--provider",
        choices=("openai", "dashscope"),
        default="openai",
        help="openai: any OpenAI-compatible endpoint; dashscope: Qwen models on DashScope",
    )
    parser.add_argument("--base-url", help="the endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument(
        "--api-key-env",
        help="environment variable with the API key "
        "(default: OPENAI_API_KEY, or DASHSCOPE_API_KEY with --provider dashscope)",
    )


def _run_demo(args: argparse.Namespace) -> int:
    from copaw_context.demo import demo_main

    if args.steps < 2:
        print("copaw-context: error: --steps must be at least 2", file=sys.stderr)
        return 2
    return demo_main(
        config_path=args.config,
        workspace=args.workspace,
        steps=args.steps,
        plot=args.plot,
        model=args.model,
        provider=args.provider,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
    )


def _add_chat(subcommands: _Subcommands) -> None:
    parser = subcommands.add_parser(
        "chat",
        help="chat with a real model, with context management and /compact",
        description="An interactive chat with a real OpenAI-compatible model, managed by "
        "MemoryCompactionHook with the settings of an agent.json. /compact [note], /context, "
        "/clear and /new work; /exit quits.",
    )
    parser.add_argument("--config", required=True, metavar="PATH", help="the agent.json")
    parser.add_argument("--workspace", default=".", help="the agent workspace (default: .)")
    _add_model_options(parser, required=True)
    parser.set_defaults(handler=_run_chat)


def _run_chat(args: argparse.Namespace) -> int:
    from copaw_context.chat import chat_main

    return chat_main(
        config=args.config,
        workspace=args.workspace,
        model=args.model,
        provider=args.provider,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
    )


_SUBCOMMANDS: tuple[Callable[[_Subcommands], None], ...] = (
    _add_check_config,
    _add_demo,
    _add_chat,
    add_memory,
)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="copaw-context",
        description="QwenPaw-style light context management for AgentScope agents.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subcommands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for add_subcommand in _SUBCOMMANDS:
        add_subcommand(subcommands)
    return parser


@contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    """Show the package's logged warnings (e.g. unknown config keys) on stderr while running."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("copaw-context: %(levelname)s: %(message)s"))
    handler.setLevel(logging.WARNING)
    package_logger = logging.getLogger("copaw_context")
    package_logger.addHandler(handler)
    try:
        yield
    finally:
        package_logger.removeHandler(handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for a bad config or bad usage)."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 2
    handler: Callable[[argparse.Namespace], int] = args.handler
    with _warnings_to_stderr():
        try:
            return handler(args)
        except ConfigError as error:
            print(f"copaw-context: error: {error}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    raise SystemExit(main())
