"""Driving QwenPaw 1.1.12 offline through its own request path, for tests/qwenpaw/.

A :class:`QwenPawSite` is one agent in QwenPaw's working folder: its profile in config.json,
its agent.json as QwenPaw writes it (``save_agent_config``), its active model's window set
the way a QwenPaw user sets it (``ProviderManager.update_model_config``). Requests go through
``Workspace`` + ``AgentRunner.query_handler`` exactly as QwenPaw's app sends them; the only
thing replaced is QwenPaw's model factory, which returns one ``ScriptedChatModel``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import Msg
from agentscope_runtime.engine.schemas.agent_schemas import AgentRequest
from qwenpaw.agents import model_factory, react_agent
from qwenpaw.agents.context import light_context_manager
from qwenpaw.agents.memory import reme_light_memory_manager
from qwenpaw.app.runner.control_commands import register_command
from qwenpaw.app.workspace.workspace import Workspace
from qwenpaw.config.config import (
    AgentProfileConfig,
    ChannelConfig,
    ModelSlotConfig,
    save_agent_config,
)
from qwenpaw.plugins.loader import PluginLoader
from qwenpaw.providers import ProviderManager

from copaw_context.cli import main
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step, tool_calls_step
from tests.qwenpaw_attacks import agent_calls, call_tokens
from tests.summaries import PREVIOUS_SUMMARY

__all__ = [
    "MODEL",
    "PROVIDER",
    "QwenPawSite",
    "agent_calls",
    "archive_lines",
    "call_tokens",
    "tool_results",
    "install_plugin",
    "load_plugins",
    "scripted_agent",
]

PROVIDER, MODEL = "openai", "gpt-4.1"  # a built-in provider's model (never called)
FACTORY_USERS = (model_factory, react_agent, light_context_manager, reme_light_memory_manager)


def scripted_agent(command: str = "seq 1 20000") -> Callable[[ModelCall], list[Any]]:
    """The agent's model: each request runs ``command`` with QwenPaw's own
    ``execute_shell_command`` (a request ``CALL <tool> <json arguments>`` calls that tool
    instead), then answers; the compactor (a call without tools) gets a valid summary;
    another tool-using caller (ReMe's summariser) gets a line of text."""

    def step(call: ModelCall) -> list[Any]:
        if not call.tools:
            return text_step(PREVIOUS_SUMMARY)
        if "execute_shell_command" not in call.tool_names:
            return text_step("noted")
        last = call.formatted[-1]
        if last.get("role") == "tool":
            return text_step(f"done after {len(call.formatted)} messages")
        request = str(last.get("content") or "")
        if isinstance(last.get("content"), list):
            request = " ".join(str(b.get("text", "")) for b in last["content"])
        if request.startswith("CALL "):
            _, name, arguments = request.split(" ", 2)
            return tool_calls_step((name, json.loads(arguments)))
        return tool_calls_step(("execute_shell_command", {"command": command}))

    return step


def tool_results(call: ModelCall) -> list[str]:
    """The tool answers in one model input, in order."""
    return [str(m.get("content")) for m in call.formatted if m.get("role") == "tool"]


def archive_lines(workspace: Path) -> list[dict[str, Any]]:
    """Every line of ``dialog/*.jsonl``, parsed."""
    lines = []
    for path in sorted((workspace / "dialog").glob("*.jsonl")):
        lines += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return lines


def install_plugin(home: Path) -> None:
    """``copaw-context qwenpaw install --home HOME``, as a user types it."""
    assert main(["qwenpaw", "install", "--home", str(home)]) == 0


async def load_plugins(home: Path) -> None:
    """What QwenPaw's app does at start (``app/_app.py``, ``_background_startup``): load the
    plugins in ``home/plugins``, then register their control commands."""
    loader = PluginLoader([home / "plugins"])
    await loader.load_all_plugins()
    for registration in loader.registry.get_control_commands():
        register_command(registration.handler)


class QwenPawSite:
    """One QwenPaw agent (``agent_id``) in ``home``, its model's window ``window`` tokens."""

    def __init__(
        self,
        home: Path,
        agent_id: str,
        monkeypatch: pytest.MonkeyPatch,
        *,
        window: int = 8000,
        running: dict[str, Any] | None = None,
    ) -> None:
        self.home = home
        self.agent_id = agent_id
        self.workspace = home / "workspaces" / agent_id
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.model = ScriptedChatModel([scripted_agent()] * 400, model_name=MODEL)
        for module in FACTORY_USERS:
            monkeypatch.setattr(module, "create_model_and_formatter", self._factory, raising=False)
        profiles = {agent_id: {"id": agent_id, "workspace_dir": str(self.workspace)}}
        config = {"agents": {"active_agent": agent_id, "profiles": profiles}}
        (home / "config.json").write_text(json.dumps(config), encoding="utf-8")
        profile = AgentProfileConfig(
            id=agent_id,
            name="A1",
            workspace_dir=str(self.workspace),
            language="en",
            channels=ChannelConfig(),  # the console, as QwenPaw's own agents have it
            active_model=ModelSlotConfig(provider_id=PROVIDER, model=MODEL),
        )
        for key, value in (running or {}).items():
            setattr(profile.running, key, value)
        save_agent_config(agent_id, profile)
        self.window = window
        self.sent_ids: list[str] = []

    def _factory(self, agent_id: str | None = None) -> tuple[Any, Any]:
        return self.model, self.model.formatter

    @property
    def agent_json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.workspace / "agent.json").read_text("utf-8"))
        return data

    async def start(self) -> Workspace:
        """A started ``Workspace`` (as QwenPaw's app starts each agent), with the model's
        window set as a QwenPaw user sets it (Models page: max input length)."""
        providers = ProviderManager.get_instance()
        await providers.update_model_config(PROVIDER, MODEL, {"max_input_length": self.window})
        workspace = Workspace(self.agent_id, str(self.workspace))
        await workspace.start()
        return workspace

    async def ask(self, workspace: Workspace, text: str, session: str = "s1") -> str:
        """One request through ``AgentRunner.query_handler``; the text of its last reply."""
        request = AgentRequest(session_id=session, user_id="u1", channel="console", input=[])
        last_text = ""
        message = Msg("user", text, "user")
        self.sent_ids.append(message.id)
        async for msg, last in workspace.runner.query_handler([message], request=request):
            if last:
                last_text = msg.get_text_content() or ""
        return last_text

    def saved_memory(self, session: str = "s1") -> dict[str, Any]:
        """The session's saved ``agent.memory`` (what QwenPaw loads next time)."""
        (path,) = [p for p in (self.workspace / "sessions").rglob("*.json") if session in p.name]
        memory: dict[str, Any] = json.loads(path.read_text("utf-8"))["agent"]["memory"]
        return memory
