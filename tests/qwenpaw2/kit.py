"""Driving QwenPaw 2.2.2 offline through its own request path, for tests/qwenpaw2/.

A :class:`QwenPawSite` is one agent in QwenPaw's working folder: its profile in config.json,
its agent.json as QwenPaw writes it (``save_agent_config``; ``Workspace.start()`` writes it
again), its active model's window set the way a QwenPaw user sets it
(``ProviderManager.update_model_config``). :meth:`QwenPawSite.start` starts what QwenPaw's
app starts for it (``app/_app.py``): the ``AppServiceManager``, a ``WorkspaceRegistry`` with
QwenPaw's built-in hooks and commands, the agent's ``Workspace``, then the plugins' startup
hooks. Requests go through ``Workspace.stream_query`` -> ``Runtime.run`` exactly as QwenPaw's
channels send them; the only thing replaced is QwenPaw's model factory, which returns one
``ScriptedChatModel`` sized as QwenPaw's factory sizes a model (the provider's window).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from qwenpaw.agents import model_factory
from qwenpaw.app.app_services import AppServiceManager
from qwenpaw.app.workspace.bootstrap_factory import WorkspaceBootstrapFactory
from qwenpaw.app.workspace.workspace import Workspace
from qwenpaw.app.workspace_registry import WorkspaceRegistry
from qwenpaw.config.config import AgentProfileConfig, ModelSlotConfig, save_agent_config
from qwenpaw.plugins.loader import PluginLoader
from qwenpaw.plugins.registry import PluginRegistry
from qwenpaw.providers import ProviderManager
from qwenpaw.schemas import AgentRequest

from copaw_context.cli import main
from copaw_context.testing import ModelCall, ScriptedChatModel, text_step, tool_calls_step
from tests.qwenpaw_attacks import agent_calls, call_tokens
from tests.summaries import PREVIOUS_SUMMARY

__all__ = [
    "MODEL",
    "PROVIDER",
    "QwenPawApp",
    "QwenPawSite",
    "agent_calls",
    "archive_lines",
    "call_tokens",
    "install_plugin",
    "load_plugins",
    "request_text",
    "scripted_agent",
    "tool_results",
]

PROVIDER, MODEL = "openai", "gpt-4.1"  # a built-in provider's model (never called)
_LOADED: list[PluginLoader] = []  # QwenPaw's plugin registry is one per process


def request_text(message: dict[str, Any]) -> str:
    """The text of one OpenAI-formatted message."""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def scripted_agent(command: str = "seq 1 20000") -> Callable[[ModelCall], list[Any]]:
    """The agent's model: each request runs ``command`` with QwenPaw's own
    ``execute_shell_command``, then answers; the compactor (a call without tools) gets a
    valid summary; another caller (ReMe's summariser, ...) gets a line of text.

    QwenPaw adds a ``<system-hint>`` user message after a tool result: the request is the
    last user message that is not one of QwenPaw's."""

    def step(call: ModelCall) -> list[Any]:
        if not call.tools:
            return text_step(PREVIOUS_SUMMARY)
        if "execute_shell_command" not in call.tool_names:
            return text_step("noted")
        roles = [m.get("role") for m in call.formatted]
        requests = [
            i
            for i, m in enumerate(call.formatted)
            if m.get("role") == "user" and not request_text(m).lstrip().startswith("<system-")
        ]
        if "tool" in roles[requests[-1] if requests else 0 :]:
            return text_step(f"done after {len(call.formatted)} messages")
        return tool_calls_step(("execute_shell_command", {"command": command}))

    return step


def tool_results(call: ModelCall) -> list[str]:
    """The tool answers in one model input, in order."""
    return [request_text(m) for m in call.formatted if m.get("role") == "tool"]


def archive_lines(workspace: Path) -> list[dict[str, Any]]:
    """Every line of ``dialog/*.jsonl``, parsed."""
    lines = []
    for path in sorted((workspace / "dialog").glob("*.jsonl")):
        lines += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return lines


def install_plugin(home: Path) -> str:
    """``copaw-context qwenpaw install --home HOME``, as a user types it (QwenPaw 2.2 is
    what this Python has); what it printed."""
    out = StringIO()
    with redirect_stdout(out):
        assert main(["qwenpaw", "install", "--home", str(home)]) == 0
    return out.getvalue()


async def load_plugins(home: Path) -> PluginLoader:
    """What QwenPaw's app does at start (``_background_startup``): load the plugins in
    ``home/plugins`` (once per process: QwenPaw's plugin registry is process-wide)."""
    if not _LOADED:
        loader = PluginLoader([home / "plugins"])
        await loader.load_all_plugins()
        _LOADED.append(loader)
    return _LOADED[0]


class QwenPawApp:
    """What QwenPaw's app runs for one agent: its services, registry and workspace."""

    def __init__(self, services: Any, registry: Any, workspace: Workspace) -> None:
        self.services = services
        self.registry = registry
        self.workspace = workspace

    async def stop(self) -> None:
        """QwenPaw's shutdown: the plugins' shutdown hooks, the agents, the services."""
        for hook in PluginRegistry().get_shutdown_hooks():
            result = hook.callback()
            if hasattr(result, "__await__"):
                await result
        await self.registry.stop_all()
        await self.services.stop()


class QwenPawSite:
    """One QwenPaw agent (``agent_id``) in ``home``, its model's window ``window`` tokens."""

    def __init__(
        self,
        home: Path,
        agent_id: str,
        monkeypatch: pytest.MonkeyPatch,
        *,
        window: int = 20000,
        strategy: str = "native",
        running: dict[str, Any] | None = None,
    ) -> None:
        self.home = home
        self.agent_id = agent_id
        self.workspace = home / "workspaces" / agent_id
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.model = ScriptedChatModel([scripted_agent()] * 400, model_name=MODEL)
        monkeypatch.setattr(model_factory, "create_model_and_formatter", self._factory)
        profiles = {agent_id: {"id": agent_id, "workspace_dir": str(self.workspace)}}
        config = {"agents": {"active_agent": agent_id, "profiles": profiles}}
        (home / "config.json").write_text(json.dumps(config), encoding="utf-8")
        profile = AgentProfileConfig(
            id=agent_id,
            name="A1",
            workspace_dir=str(self.workspace),
            language="en",
            active_model=ModelSlotConfig(provider_id=PROVIDER, model=MODEL),
        )
        profile.running.light_context_config.strategy = strategy
        for key, value in (running or {}).items():
            setattr(profile.running, key, value)
        save_agent_config(agent_id, profile)
        self.window = window
        self.sent: list[str] = []

    def _factory(self, agent_id: Any = None, **_kwargs: Any) -> tuple[Any, Any]:
        # QwenPaw's factory sizes the model from its provider (_ensure_model_context_size).
        provider = ProviderManager.get_instance().get_provider(PROVIDER)
        self.model.context_size = provider.get_context_size(MODEL)
        return self.model, self.model.formatter

    @property
    def agent_json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.workspace / "agent.json").read_text("utf-8"))
        return data

    async def start(self) -> QwenPawApp:
        """QwenPaw's app started for this agent, with the model's window set as a QwenPaw
        user sets it (Models page: max input length)."""
        providers = ProviderManager.get_instance()
        await providers.update_model_config(PROVIDER, MODEL, {"max_input_length": self.window})
        services = AppServiceManager()
        await services.start()
        kwargs = WorkspaceBootstrapFactory.build_bootstrap_kwargs(services)
        registry = WorkspaceRegistry(app_services=services, bootstrap_plugins_kwargs=kwargs)
        workspace = await registry.get_agent(self.agent_id)
        plugins = PluginRegistry()
        plugins.set_workspace_manager(registry)
        for hook in plugins.get_startup_hooks():
            result = hook.callback()
            if hasattr(result, "__await__"):
                await result
        return QwenPawApp(services, registry, workspace)

    async def ask(self, app: QwenPawApp, text: str, session: str = "s1") -> str:
        """One request through ``Workspace.stream_query``; the text of its reply."""
        self.sent.append(text)
        request = AgentRequest(
            input=[{"role": "user", "content": [{"type": "text", "text": text}]}],
            session_id=session,
            user_id="u1",
            channel="console",
        )
        events = [event async for event in app.workspace.stream_query(request)]
        texts = [
            part.text
            for message in getattr(events[-1], "output", None) or []
            for part in message.content or []
            if getattr(part, "text", None)
        ]
        return "\n".join(texts)

    def saved_state(self, session: str = "s1") -> dict[str, Any]:
        """The session's saved ``AgentState`` (what QwenPaw loads next time)."""
        (path,) = [p for p in (self.workspace / "sessions").rglob("*.json") if session in p.name]
        state: dict[str, Any] = json.loads(path.read_text("utf-8"))["agent"]["state"]
        return state
