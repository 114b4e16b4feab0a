"""``copaw-context demo``: a long agent session that overflows a small window, offline.

A real AgentScope 2.x ``Agent`` with ``MemoryCompactionHook`` works through a scripted
session (HTML pages, build logs, a Chinese document, minified JSON, parallel tool calls)
driven by :class:`copaw_context.testing.ScriptedChatModel`. With ``--model`` (and
``--base-url``) it talks to a real OpenAI-compatible model instead.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

from agentscope.agent import Agent, InjectionConfig
from agentscope.message import UserMsg
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase
from agentscope.tool import Toolkit

from copaw_context.agentscope2 import MemoryCompactionHook
from copaw_context.cli._chat_input import Endpoint
from copaw_context.cli._host_logs import host_warnings_quiet
from copaw_context.cli._interrupt import stop_on_ctrl_c
from copaw_context.cli.demo._text import preview
from copaw_context.cli.demo.plot import plot_steps
from copaw_context.cli.demo.policy import demo_policy
from copaw_context.cli.demo.result import DemoResult, StepRecord, pruning_drops, step_note
from copaw_context.cli.demo.tools import make_demo_tools
from copaw_context.core.config.running import (
    RunningConfig,
    load_running_config,
    parse_running_config,
)
from copaw_context.testing import ScriptedChatModel

__all__ = ["STEP_HEADER", "demo_config", "demo_main", "print_report", "real_chat_model", "run_demo"]

DEMO_WINDOW = 16000


def demo_config(window: int = DEMO_WINDOW, compactor: str = "extractive") -> RunningConfig:
    """The demo's settings: a small window so several compactions happen."""
    return parse_running_config(
        {
            "running": {
                "max_input_length": window,
                "context_manager_backend": "light",
                "light_context_config": {
                    "compactor": compactor,
                    "token_counter": "o200k_base",
                    "context_compact_config": {
                        "compact_threshold_ratio": 0.75,
                        "reserve_threshold_ratio": 0.25,
                    },
                    "tool_result_pruning_config": {
                        "pruning_recent_msg_max_bytes": 12000,
                        "pruning_old_msg_max_bytes": 1500,
                        "exempt_recent_max_bytes": 16000,
                        "exempt_old_max_bytes": 3000,
                    },
                },
            }
        },
        source="demo settings",
    )


class _StepRecorder(MiddlewareBase):
    """Records the context size the model receives at every call."""

    def __init__(self, hook: MemoryCompactionHook, result: DemoResult, out: TextIO | None) -> None:
        self.hook = hook
        self.result = result
        self.out = out

    async def on_model_call(
        self, agent: Any, input_kwargs: dict[str, Any], next_handler: Callable[..., Awaitable[Any]]
    ) -> Any:
        stats = await self.hook.agent_stats(agent)
        record = StepRecord(
            step=len(self.result.steps) + 1,
            context_tokens=stats["last_prompt_tokens"],
            truncated=stats["truncated"],
            offloaded=stats["offloaded"],
            compactions=stats["compactions"],
        )
        previous = self.result.steps[-1] if self.result.steps else None
        self.result.steps.append(record)
        if self.out is not None:
            print(
                f"step {record.step:3d} | context {record.context_tokens:6d} tokens "
                f"| truncations {record.truncated:3d} | offloads {record.offloaded:3d} "
                f"| compactions {record.compactions:2d}{step_note(previous, record)}",
                file=self.out,
            )
        return await next_handler(**input_kwargs)


STEP_HEADER = (
    "Each step line is one model call: the tokens of the context the model receives, then "
    "totals so far:\ntruncations = tool results cut to a limit, offloads = full outputs saved "
    "under tool_result/, compactions = summaries of older messages (archived under dialog/)."
)


async def run_demo(
    workspace: Path,
    *,
    steps: int = 60,
    model: ChatModelBase | None = None,
    config: RunningConfig | None = None,
    out: TextIO | None = sys.stdout,
    fresh: bool = True,
) -> DemoResult:
    """Run the session in ``workspace`` and return what happened."""
    from copaw_context.testing import openai_pairing_problems

    await asyncio.to_thread(_prepare_workspace, workspace, fresh)
    config = config or demo_config()
    result = DemoResult(window=config.max_input_length, threshold=config.compact_threshold_tokens())
    policy = demo_policy(steps)
    scripted = model is None
    chat_model = model or ScriptedChatModel(
        [policy] * (steps * 4), context_size=config.max_input_length
    )
    # Summaries for long-term memory come from a model of their own (scripted here).
    summary_model = None if model else ScriptedChatModel([policy] * (steps * 4))
    hook = MemoryCompactionHook(
        config, workspace, compactor_model=summary_model, on_event=result.events.append
    )
    agent = Agent(
        name="assistant",
        system_prompt=(
            "You are a build engineer's assistant. Use the tools to inspect pages, logs and "
            "documents; continue truncated outputs with read_file when you need more."
        ),
        model=chat_model,
        toolkit=Toolkit(tools=[*await hook.list_tools(), *make_demo_tools()]),
        middlewares=[hook, _StepRecorder(hook, result, out)],
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    turns = policy.user_turns() if scripted else policy.user_turns()[:3]
    with stop_on_ctrl_c() as stopped, host_warnings_quiet():
        if out is not None:
            print(STEP_HEADER, file=out, flush=True)
        try:
            for turn in turns:
                if out is not None:
                    print(f"\nuser> {preview(turn, 100)}", file=out)
                reply = await agent.reply(UserMsg("user", turn))
                if stopped.is_set():
                    break  # AgentScope answered the interruption; the demo ends here
                if out is not None:
                    text = preview(reply.get_text_content() or "", 160)
                    print(f"assistant> {text}", file=out)
        finally:
            await hook.close()  # the memory summariser finishes in the background
    if stopped.is_set():
        raise KeyboardInterrupt
    if isinstance(chat_model, ScriptedChatModel):
        for call in chat_model.calls:
            if call.tools:
                result.pairing_problems.extend(openai_pairing_problems(call.formatted))
    if isinstance(chat_model, ScriptedChatModel):
        result.recall = _recall_result([m for c in chat_model.calls for m in c.messages])
    result.memory_log = await asyncio.to_thread(_memory_log, workspace)
    summary = agent.state.summary
    result.summary = summary if isinstance(summary, str) else str(summary)
    result.files = await asyncio.to_thread(_written_files, workspace)
    return result


_MARKER = ".copaw-context-demo"


def _prepare_workspace(workspace: Path, fresh: bool) -> None:
    """Empty a previous demo workspace; never touch a folder the demo did not create (an
    empty one is used as it is: its permissions and identity stay)."""
    if fresh and workspace.exists():
        entries = list(workspace.iterdir())
        if entries and not (workspace / _MARKER).is_file():
            raise SystemExit(
                f"{workspace} is not empty and was not made by the demo; "
                "pass an empty or new folder with --workspace"
            )
        for entry in entries:  # what an earlier demo run wrote
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    try:
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / _MARKER).write_text("made by copaw-context demo; safe to delete\n")
    except OSError as error:
        raise SystemExit(
            f"--workspace {workspace}: cannot write there "
            f"({error.strerror or error}); pass a folder you can write to"
        ) from None


def _recall_result(messages: list[Any]) -> str:
    """What the last ``memory_search`` returned to the agent, as the model saw it."""
    found = [
        block
        for msg in messages
        for block in msg.content
        if getattr(block, "type", "") == "tool_result" and block.name == "memory_search"
    ]
    if not found:
        return ""
    output = found[-1].output
    return output if isinstance(output, str) else "\n".join(p.text for p in output if p.text)


def _memory_log(workspace: Path) -> str:
    logs = sorted((workspace / "memory").glob("????-??-??.md"))
    return logs[-1].read_text(encoding="utf-8") if logs else ""


def _written_files(workspace: Path) -> list[Path]:
    return sorted(
        p
        for p in workspace.rglob("*")
        if p.is_file() and not p.name.endswith(".lock") and p.name != _MARKER
    )


def print_report(result: DemoResult, workspace: Path, out: TextIO = sys.stdout) -> None:
    """The closing report: compactions, the summary and the files written (a section with
    nothing to show is left out, or said in one line)."""
    compactions = [e for e in result.events if e.kind == "compaction"]
    print("\n=== compactions ===", file=out)
    for e in compactions:
        print(
            f"- {e.tokens_before} -> {e.tokens_after} tokens, {e.messages_compacted} message(s) "
            f"archived, {e.messages_kept} kept, {e.method}, {e.duration_seconds * 1000:.0f} ms",
            file=out,
        )
    if not compactions:
        print(
            f"none in {len(result.steps)} model calls: the context stayed under the threshold, "
            "so there is no summary and nothing was archived (more steps, e.g. --steps 60, "
            "compact several times)",
            file=out,
        )
    print(f"threshold {result.threshold} tokens of a {result.window}-token window", file=out)
    drops = pruning_drops(result)
    if drops:
        steps = ", ".join(str(r.step) for r in drops)
        print(
            f"drops without a compaction (step{'s' if len(drops) > 1 else ''} {steps}): older "
            "tool results cut to their "
            "smaller limit, their full text still in tool_result/",
            file=out,
        )
    print(f"pairing problems seen by the model: {len(result.pairing_problems)}", file=out)
    sections = [
        ("summary in the context", result.summary),
        ("long-term memory: today's log (written by the summariser)", result.memory_log),
        ("recall: memory_search over what left the context", result.recall),
    ]
    for title, text in sections:
        if text.strip():
            print(f"\n=== {title} ===", file=out)
            print(text.strip(), file=out)
    print("\n=== files written ===", file=out)
    for path in result.files:
        print(f"- {path.relative_to(workspace)} ({path.stat().st_size} bytes)", file=out)


def real_chat_model(
    provider: str, model_name: str, base_url: str | None, api_key_env: str | None
) -> ChatModelBase:
    """A real chat model for ``--model``: OpenAI-compatible or DashScope (Qwen)."""
    env = api_key_env or ("DASHSCOPE_API_KEY" if provider == "dashscope" else "OPENAI_API_KEY")
    api_key = os.environ.get(env, "")
    if provider == "dashscope":
        from agentscope.credential import DashScopeCredential
        from agentscope.model import DashScopeChatModel

        if not api_key:
            raise SystemExit(f"--provider dashscope needs an API key in ${env}")
        dashscope = (
            DashScopeCredential(api_key=api_key, base_url=base_url)
            if base_url
            else DashScopeCredential(api_key=api_key)
        )
        return DashScopeChatModel(credential=dashscope, model=model_name, stream=False)
    from agentscope.credential import OpenAICredential
    from agentscope.model import OpenAIChatModel

    if not api_key and base_url is None:
        raise SystemExit(f"--model needs an API key in ${env} (or a --base-url of a local server)")
    credential = OpenAICredential(api_key=api_key or "none", base_url=base_url)
    return OpenAIChatModel(credential=credential, model=model_name, stream=False)


def demo_main(
    *,
    config_path: str | None = None,
    workspace: str,
    steps: int,
    plot: str | None,
    model: str | None,
    provider: str = "openai",
    base_url: str | None = None,
    api_key_env: str | None = None,
) -> int:
    """Entry point used by the CLI."""
    root = Path(workspace).resolve()
    chat_model = real_chat_model(provider, model, base_url, api_key_env) if model else None
    if config_path:
        config = load_running_config(config_path)
    else:
        config = demo_config(compactor="llm" if chat_model else "extractive")
    out = sys.stdout  # the current one (the defaults were bound when the module loaded)
    try:
        result = asyncio.run(run_demo(root, steps=steps, model=chat_model, config=config, out=out))
    except Exception as error:
        if chat_model is None:
            raise  # the offline demo failing is a bug: keep the traceback
        why = Endpoint(provider, base_url, api_key_env).explain(error).split(". Your message")[0]
        raise SystemExit(f"the demo's model call failed: {why}") from None
    print_report(result, root, out)
    if plot:
        plot_steps(result, Path(plot))
        print(f"\nplot written to {plot}")
    return 1 if result.pairing_problems else 0
