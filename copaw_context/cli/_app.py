"""The ``copaw-context`` command line.

Each subcommand is one ``_add_<name>(subcommands)`` function that registers its parser and sets
``handler`` to a ``_run_<name>(args) -> int`` function; list the adder in ``_SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from copaw_context import __version__
from copaw_context.cli._workspace import workspace_error
from copaw_context.cli.check_config import add_check_config, explain_config_error
from copaw_context.cli.memory import add_memory
from copaw_context.cli.qwenpaw import add_qwenpaw
from copaw_context.cli.store import add_store
from copaw_context.core.errors import ConfigError

__all__ = ["main"]

if TYPE_CHECKING:  # argparse has no public name for this type
    _Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


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


def _without_agentscope2(command: str) -> bool:
    """Say so (and return True) when ``command``, which drives a 2.x agent, cannot run."""
    from importlib.metadata import version

    from copaw_context import installed_agentscope_major

    try:
        if installed_agentscope_major() >= 2:
            return False
        installed = f"AgentScope {version('agentscope')} is installed"
    except ImportError:
        installed = "AgentScope is not installed"
    print(
        f"copaw-context: error: `copaw-context {command}` runs an AgentScope 2.x agent and "
        f"{installed}; with AgentScope 1.x, attach the hook to your ReActAgent from Python "
        "(README: 'Attach it to an AgentScope 1.x ReActAgent')",
        file=sys.stderr,
    )
    return True


def _run_demo(args: argparse.Namespace) -> int:
    if _without_agentscope2("demo"):
        return 2
    from copaw_context.cli.demo import demo_main

    if args.steps < 2:
        print("copaw-context: error: --steps must be at least 2", file=sys.stderr)
        return 2
    if (args.plot and _bad_plot(args.plot)) or _bad_workspace(args.workspace):
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


def _bad_plot(path: str) -> bool:
    """Say so (and return True) when ``--plot path`` would fail after the run: matplotlib
    missing, a format it cannot write, or a folder that does not exist."""
    problem = None
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        problem = (
            "--plot needs matplotlib, which is not installed; "
            "install it with: pip install 'copaw-context[plot]'"
        )
    else:
        formats = FigureCanvasBase.get_supported_filetypes()
        suffix = os.path.splitext(path)[1].lstrip(".").lower()
        folder = os.path.dirname(os.path.abspath(os.path.expanduser(path)))
        if suffix not in formats:
            problem = f"--plot {path}: the name must end in one of .{', .'.join(sorted(formats))}"
        elif not os.path.isdir(folder):
            problem = f"--plot {path}: the folder {folder} does not exist"
    if problem is not None:
        print(f"copaw-context: error: {problem}", file=sys.stderr)
    return problem is not None


def _bad_workspace(workspace: str) -> bool:
    """Say so (and return True) when ``workspace`` is no folder and cannot be made one."""
    problem = workspace_error(workspace, create=True)
    if problem is not None:
        print(f"copaw-context: error: {problem}", file=sys.stderr)
    return problem is not None


def _add_chat(subcommands: _Subcommands) -> None:
    parser = subcommands.add_parser(
        "chat",
        help="chat with a real model, with context management and /compact",
        description="An interactive chat with a real OpenAI-compatible model, managed by "
        "MemoryCompactionHook with the settings of an agent.json. /compact [note], /context, "
        "/clear, /new, /history, /dump_history and /load_history work; /exit quits.",
    )
    parser.add_argument("--config", required=True, metavar="PATH", help="the agent.json")
    parser.add_argument("--workspace", default=".", help="the agent workspace (default: .)")
    _add_model_options(parser, required=True)
    parser.set_defaults(handler=_run_chat)


def _run_chat(args: argparse.Namespace) -> int:
    if _without_agentscope2("chat"):
        return 2
    from copaw_context.cli.chat import chat_main

    new = not os.path.exists(args.workspace)
    if _bad_workspace(args.workspace):
        return 2
    if new:  # a typo would start an empty memory unnoticed
        print(
            f"copaw-context: {args.workspace} did not exist: starting a new workspace there",
            file=sys.stderr,
        )
    return chat_main(
        config=args.config,
        workspace=args.workspace,
        model=args.model,
        provider=args.provider,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
    )


_SUBCOMMANDS: tuple[Callable[[_Subcommands], None], ...] = (
    add_check_config,
    _add_demo,
    _add_chat,
    add_memory,
    add_qwenpaw,
    add_store,
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


CLOSED_PIPE_STATUS = 141
"""The exit status when the reader of stdout went away (``| head``): 128 + SIGPIPE, as a
command killed by the signal reports it."""

INTERRUPTED_STATUS = 130
"""The exit status after Ctrl-C: 128 + SIGINT, as a shell reports a command it interrupted."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (2 for a bad config or bad usage).

    Output into a pipe whose reader has gone (``copaw-context check-config a.json | head -1``)
    ends the command silently with status 141, as well-kept command line tools do.
    """
    try:
        status = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
        return CLOSED_PIPE_STATUS
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Ctrl-C: one line, no traceback; what the engine wrote is whole (fsynced, atomic).
        print("\ncopaw-context: interrupted", file=sys.stderr)
        return INTERRUPTED_STATUS
    return status


def _drop_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (stdout replaced): nothing to flush
        pass


def _main(argv: Sequence[str] | None) -> int:
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
            print(f"copaw-context: error: {explain_config_error(error)}", file=sys.stderr)
            return 2
        except SystemExit as exit_:  # a handler's refusal in words: one error line, status 2
            if isinstance(exit_.code, str):
                print(f"copaw-context: error: {exit_.code}", file=sys.stderr)
                return 2
            raise


if __name__ == "__main__":
    raise SystemExit(main())
