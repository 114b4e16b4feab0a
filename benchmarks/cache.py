"""Prompt-cache reuse: the same seeded long session through three context managers.

(a) ours, the middleware on a real AgentScope 2.x ``Agent``; (b) AgentScope 2.x's built-in
compression on the same agent without it; (c) QwenPaw 1.1's own light context manager, its
real code on its own request path, in ``.venv-qwenpaw1`` (a subprocess,
``benchmarks/cache_qwenpaw.py``; left out when that venv is missing). Each agent gets the same
script from a scripted model (every step a model call, tool outputs 200 B to 200 KB, parallel
calls, a 64K window so that it compacts several times) and every model input of the agent is
measured the same way (``benchmarks/cache_script.py``): its o200k LCP with the previous one,
the session's reused share, and each break with its cause.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from agentscope.agent import Agent, InjectionConfig
from agentscope.message import Msg, UserMsg
from agentscope.model import ChatResponse, ChatUsage
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolChoice, Toolkit

from benchmarks.cache_script import (
    WINDOW,
    Script,
    fresh_tokens,
    make_script,
    measure_inputs,
    segments,
)
from benchmarks.compaction import summary_response
from copaw_context import MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.events import ContextEvent
from copaw_context.testing import ScriptedChatModel, text_step, tool_calls_step

__all__ = ["bench_cache"]

_ROOT = Path(__file__).resolve().parent.parent
_QWENPAW_PYTHON = _ROOT / ".venv-qwenpaw1" / "bin" / "python"
_SYSTEM_PROMPT = "You are a build engineer's assistant. Be precise. " * 20
TOOL = "shell"
_RUNNING: dict[str, Any] = {}
SMALL_RECENT = 10_000
"""The trade-off row: copaw-context with ``pruning_recent_msg_max_bytes`` at this (the model
sees the first 10 KB of a fresh result instead of 50 KB; the rest is read from its file)."""


class _Model(ScriptedChatModel):
    """The agent's turns from the script; a compactor's call gets the summary (AgentScope's
    structured output too); the agent's inputs are kept as measured segments."""

    def __init__(self, script: Script) -> None:
        super().__init__([], context_size=WINDOW, model_name="gpt-4o")
        self.script = script
        self.inputs: list[list[str]] = []

    async def _call_api(
        self,
        model_name: str,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> ChatResponse:
        usage = ChatUsage(input_tokens=1, output_tokens=1, time=0.0)
        names = [t.get("function", {}).get("name") for t in tools or []]
        if "generate_structured_output" in names or TOOL not in names:  # a compactor's call
            return summary_response(tools)
        formatted = await self.formatter.format(messages)
        self.inputs.append(segments(tools, formatted))
        queries = self.script.next_action()
        if queries is None:
            blocks = text_step(f"done after {len(formatted)} messages")
        else:
            blocks = tool_calls_step(*((TOOL, {"query": q}) for q in queries))
        return ChatResponse(content=blocks, is_last=True, usage=usage)


def _toolkit(script: Script) -> list[FunctionTool]:
    def shell(query: str) -> str:
        """Run a shell command.

        Args:
            query (`str`): The command.
        """
        return script.outputs[query]

    allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="benchmark")
    return [FunctionTool(shell, permission=allow)]  # type: ignore[arg-type]


async def _run(
    script: Script,
    workspace: Path | None,
    shares: list[float] | None = None,
    running: dict[str, Any] | None = None,
) -> list[list[str]]:
    model = _Model(script)
    tools: list[Any] = _toolkit(script)
    middlewares: list[Any] = []
    if workspace is not None:
        settings = {"max_input_length": WINDOW, **_RUNNING, **(running or {})}
        config = parse_running_config({"running": settings})

        def on_event(event: ContextEvent) -> None:
            if event.kind == "model_call" and shares is not None:
                shares.append(event.session_reused_share)

        hook = MemoryCompactionHook(config, workspace, on_event=on_event)
        tools = [*await hook.list_tools(), *tools]
        middlewares = [hook]
    agent = Agent(
        name="assistant",
        system_prompt=_SYSTEM_PROMPT,
        model=model,
        toolkit=Toolkit(tools=tools),
        middlewares=middlewares,
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    for turn, (request, _) in enumerate(script.turns):
        script.begin(turn)
        await agent.reply(UserMsg("user", request))
    return model.inputs


def _qwenpaw(steps: int, seed: int, log: Any) -> dict[str, Any] | None:
    if not _QWENPAW_PYTHON.exists():
        log("cache: .venv-qwenpaw1 is missing (bash scripts/bootstrap_qwenpaw.sh): no QwenPaw")
        return None
    with tempfile.TemporaryDirectory(prefix="copaw-bench-qwenpaw-") as home:
        command = [str(_QWENPAW_PYTHON), "-m", "benchmarks.cache_qwenpaw", home, str(steps)]
        env = {**os.environ, "AGENTSCOPE_DISABLE_CONSOLE_OUTPUT": "true"}
        done = subprocess.run(
            [*command, str(seed)], cwd=_ROOT, env=env, capture_output=True, text=True, timeout=900
        )
    if done.returncode != 0:
        log(f"cache: the QwenPaw run failed:\n{done.stderr[-3000:]}")
        return None
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def bench_cache(root: Path, quick: bool, log: Any = print) -> dict[str, Any]:
    """The figures of each context manager on the same session (and the session's size)."""
    steps, seed = (60 if quick else 200), 11
    results: dict[str, Any] = {"steps": steps, "window": WINDOW, "small_recent": SMALL_RECENT}
    results["fresh_tokens"] = fresh_tokens(make_script(steps, seed))
    log("cache: ours ...")
    shares: list[float] = []
    ours = asyncio.run(_run(make_script(steps, seed), root / "cache-ours", shares))
    # The engine's own figure (ledger counts, our counter) beside the benchmark's measure.
    results["ours"] = {**measure_inputs(ours).as_dict(), "engine_share": shares[-1]}
    log(f"cache: ours, pruning_recent_msg_max_bytes {SMALL_RECENT:,} ...")
    pruning = {"tool_result_pruning_config": {"pruning_recent_msg_max_bytes": SMALL_RECENT}}
    small = {"light_context_config": pruning}
    shares = []
    recent = asyncio.run(_run(make_script(steps, seed), root / "cache-recent", shares, small))
    results["ours_small_recent"] = {**measure_inputs(recent).as_dict(), "engine_share": shares[-1]}
    log("cache: AgentScope 2.x built-in ...")
    builtin = asyncio.run(_run(make_script(steps, seed), None))
    results["builtin"] = measure_inputs(builtin).as_dict()
    log("cache: QwenPaw 1.1 light ...")
    qwenpaw = _qwenpaw(steps, seed, log)
    if qwenpaw is not None:
        results["qwenpaw"] = qwenpaw
    return results


if __name__ == "__main__":
    print(json.dumps(bench_cache(Path(tempfile.mkdtemp()), "--quick" in sys.argv), indent=1))
