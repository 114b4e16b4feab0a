"""The prompt-cache benchmark's QwenPaw 1.1 anchor: QwenPaw's own light context manager on
its real request path (``Workspace`` + ``AgentRunner.query_handler``), only the model
scripted. Run in ``.venv-qwenpaw1`` by ``benchmarks/cache.py``:
``python -m benchmarks.cache_qwenpaw HOME STEPS SEED``; prints the figures as one JSON line.

Each tool call runs QwenPaw's own ``execute_shell_command`` (``cat`` of the script's output
files), so QwenPaw's own tool-result handling applies; copaw-context is not imported as a
host (no plugin), so QwenPaw's ``"light"`` manager is its own.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

PROVIDER, MODEL = "openai", "gpt-4.1"


async def _run(home: Path, steps: int, seed: int) -> dict[str, Any]:
    # Imported by name: these are QwenPaw 1.1's and AgentScope 1.x's (this runs in
    # .venv-qwenpaw1), which the benchmarks' type check in .venv does not have.
    def load(name: str) -> Any:
        return importlib.import_module(name)

    msg_class = load("agentscope.message").Msg
    agent_request = load("agentscope_runtime.engine.schemas.agent_schemas").AgentRequest
    model_factory = load("qwenpaw.agents.model_factory")
    react_agent = load("qwenpaw.agents.react_agent")
    light_context_manager = load("qwenpaw.agents.context.light_context_manager")
    reme_light_memory_manager = load("qwenpaw.agents.memory.reme_light_memory_manager")
    workspace_class = load("qwenpaw.app.workspace.workspace").Workspace
    qwenpaw_config = load("qwenpaw.config.config")
    providers = load("qwenpaw.providers").ProviderManager.get_instance()

    from benchmarks.cache_script import SUMMARY, WINDOW, make_script, measure_inputs, segments
    from copaw_context.testing import ModelCall, ScriptedChatModel, text_step, tool_calls_step

    script = make_script(steps, seed)
    files = home / "outputs"
    files.mkdir(parents=True, exist_ok=True)
    for query, output in script.outputs.items():
        (files / f"{query}.txt").write_text(output, encoding="utf-8")
    inputs: list[list[str]] = []

    def step(call: ModelCall) -> list[Any]:
        if not call.tools:
            return text_step(SUMMARY)
        if "execute_shell_command" not in call.tool_names:
            return text_step("noted")
        inputs.append(segments(call.tools, call.formatted))
        queries = script.next_action()
        if queries is None:
            return text_step(f"done after {len(call.formatted)} messages")
        return tool_calls_step(
            *(("execute_shell_command", {"command": f"cat {files / q}.txt"}) for q in queries)
        )

    model = ScriptedChatModel([step] * 10_000, model_name=MODEL)

    def factory(agent_id: str | None = None) -> tuple[Any, Any]:
        return model, model.formatter

    for module in (model_factory, react_agent, light_context_manager, reme_light_memory_manager):
        module.create_model_and_formatter = factory
    agent_id = "bench"
    workspace_dir = home / "workspaces" / agent_id
    workspace_dir.mkdir(parents=True, exist_ok=True)
    profiles = {agent_id: {"id": agent_id, "workspace_dir": str(workspace_dir)}}
    config = {"agents": {"active_agent": agent_id, "profiles": profiles}}
    (home / "config.json").write_text(json.dumps(config), encoding="utf-8")
    profile = qwenpaw_config.AgentProfileConfig(
        id=agent_id,
        name="bench",
        workspace_dir=str(workspace_dir),
        language="en",
        channels=qwenpaw_config.ChannelConfig(),
        active_model=qwenpaw_config.ModelSlotConfig(provider_id=PROVIDER, model=MODEL),
    )
    qwenpaw_config.save_agent_config(agent_id, profile)
    await providers.update_model_config(PROVIDER, MODEL, {"max_input_length": WINDOW})
    workspace = workspace_class(agent_id, str(workspace_dir))
    await workspace.start()
    try:
        for turn, (text, _) in enumerate(script.turns):
            script.begin(turn)
            request = agent_request(session_id="s1", user_id="u1", channel="console", input=[])
            async for _msg, _last in workspace.runner.query_handler(
                [msg_class("user", text, "user")], request=request
            ):
                pass
    finally:
        await workspace.stop()
    figures = measure_inputs(inputs).as_dict()
    figures["manager"] = type(workspace.context_manager).__module__
    return figures


def main(argv: list[str]) -> int:
    home, steps, seed = Path(argv[0]), int(argv[1]), int(argv[2])
    os.environ["QWENPAW_WORKING_DIR"] = str(home)
    os.chdir(home)  # ReMe logs to ./logs
    figures = asyncio.run(_run(home, steps, seed))
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
