"""``copaw-context chat``: an interactive chat with a real model, the hook and its commands."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from pathlib import Path
from typing import TextIO

from agentscope.agent import Agent
from agentscope.event import CustomEvent
from agentscope.message import Msg, UserMsg
from agentscope.model import ChatModelBase
from agentscope.tool import Toolkit

from copaw_context.agentscope2 import MemoryCompactionHook
from copaw_context.agentscope2.stream import STATUS_EVENT
from copaw_context.cli._chat_input import Endpoint as _Endpoint
from copaw_context.cli._chat_input import unknown_command_reply
from copaw_context.cli._host_logs import host_warnings_quiet
from copaw_context.cli.demo import real_chat_model
from copaw_context.core.config.running import (
    RunningConfig,
    aload_running_config,
    load_running_config,
)

__all__ = ["run_chat"]

logger = logging.getLogger("copaw_context")

_BANNER = (
    "copaw-context chat: type a message; /compact [note], /context, /clear, /new, /history, "
    "/dump_history [path] and /load_history path are handled by the context manager; /help "
    "lists them, /exit "
    "or Ctrl-D quits."
)


async def run_chat(
    config: str | RunningConfig,
    workspace: str,
    *,
    model_name: str,
    provider: str = "openai",
    base_url: str | None = None,
    api_key_env: str | None = None,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
    model: ChatModelBase | None = None,
) -> int:
    """Read lines from ``stdin`` and answer them with a real model until /exit or EOF.

    Status lines around compactions are shown unless the agent.json turns ``show_status``
    off; ``model`` replaces the real model (tests).
    """
    if not isinstance(config, RunningConfig):
        config = await aload_running_config(config)
    async with MemoryCompactionHook(_with_status(config), workspace) as hook:
        if model is None:
            model = real_chat_model(provider, model_name, base_url, api_key_env)
        agent = Agent(
            name="assistant",
            system_prompt=(
                "You are a helpful assistant. Use read_file to read files in the workspace."
            ),
            model=model,
            toolkit=Toolkit(tools=await hook.list_tools()),
            middlewares=[hook],
        )
        print(_BANNER, file=stdout)
        with host_warnings_quiet():
            await _chat_loop(agent, stdin, stdout, _Endpoint(provider, base_url, api_key_env))
    return 0  # the hook is closed: memory summaries still running are written


def _line_queue(stdin: TextIO) -> asyncio.Queue[str]:
    """The lines of ``stdin`` ("" at its end), read by a daemon thread: Ctrl-C at the prompt
    ends the chat at once (a blocked executor thread would hold the exit until Enter)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str] = asyncio.Queue()

    def put(line: str) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the chat has ended
            loop.call_soon_threadsafe(queue.put_nowait, line)

    def pump() -> None:
        for line in iter(stdin.readline, ""):
            put(line)
        put("")

    threading.Thread(target=pump, name="copaw-context-chat-input", daemon=True).start()
    return queue


async def _chat_loop(agent: Agent, stdin: TextIO, stdout: TextIO, endpoint: _Endpoint) -> None:
    lines = _line_queue(stdin)
    while True:
        print("you> ", end="", file=stdout, flush=True)
        line = await lines.get()
        if not line:
            return
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        unknown = unknown_command_reply(text)
        if unknown is not None:
            print(unknown, file=stdout, flush=True)
            continue
        try:
            await _reply(agent, text, stdout)
        except Exception as error:  # a provider error must not end the chat
            logger.debug("copaw-context chat: the reply failed", exc_info=True)
            print(f"assistant> error: {endpoint.explain(error)}", file=stdout, flush=True)


async def _reply(agent: Agent, text: str, stdout: TextIO) -> None:
    async for item in agent.reply_stream(UserMsg("user", text), yield_final_msg=True):
        if isinstance(item, CustomEvent) and item.name == STATUS_EVENT:
            print(f"[context] {item.value.get('text', '')}", file=stdout, flush=True)
        elif isinstance(item, Msg):
            print(f"assistant> {item.get_text_content() or ''}", file=stdout, flush=True)


def _with_status(config: RunningConfig) -> RunningConfig:
    """``show_status`` on, unless the file sets it."""
    light = config.light_context_config
    if "show_status" in light.model_fields_set:
        return config
    return config.model_copy(
        update={"light_context_config": light.model_copy(update={"show_status": True})}
    )


def chat_main(
    *,
    config: str,
    workspace: str,
    model: str,
    provider: str = "openai",
    base_url: str | None = None,
    api_key_env: str | None = None,
) -> int:
    """Entry point used by the CLI."""
    running = load_running_config(config)  # fail early with the path-named error
    folder = Path(workspace)
    if not folder.exists():  # a typo would otherwise start an empty memory unnoticed
        print(
            f"copaw-context: {folder} does not exist: starting a new workspace there",
            file=sys.stderr,
        )
    folder.mkdir(parents=True, exist_ok=True)
    return asyncio.run(
        run_chat(
            running,
            workspace,
            model_name=model,
            provider=provider,
            base_url=base_url,
            api_key_env=api_key_env,
        )
    )
