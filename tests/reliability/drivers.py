"""Real agents for the reliability and invariant suites: one ``HostDriver`` per AgentScope major.

A driver builds an agent of its major with the hook and a scripted model, runs a reply, and
reads back what the suites check: the context's part keys (``<msg id>/<type>:<block id>``,
as the adapter keys the parts it archives) and roles, the archived part keys, the summary,
the model inputs formatted per provider by the host's own formatters, the engine's session
state, and the agent's saved state (to restart from it); it also puts finished turns and a
summary into an agent's context, as if an earlier session had made them. The suites' agent
tests take the ``driver`` fixture (``driver_fixture.py``), which runs them once per driver of
:func:`available_drivers`.

``as2_driver.py`` drives AgentScope 2.x ``Agent`` s, ``as1_driver.py`` AgentScope 1.x
``ReActAgent`` s; each test environment runs the agent tests against its own major.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from copaw_context.core.archive.store import read_archive
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.report import TokenReport
from copaw_context.core.events import EventCallback

__all__ = [
    "SEED_SUMMARY_SOURCES",
    "HostDriver",
    "Reply",
    "ToolCall",
    "archived_records",
    "available_drivers",
    "formatted_text",
]

ToolCall = tuple[str, dict[str, Any], str | None]
"""A tool call a scripted step makes: (tool name, arguments, call id or None for a fresh one)."""

SEED_SUMMARY_SOURCES = [("dialog/2026-11-28.jsonl", 12)]
"""The archive a summary put in by :meth:`HostDriver.set_summary` says it was made from."""


@dataclass
class Reply:
    """A reply as the user sees it: its text and the status lines shown on the way."""

    text: str
    status: list[str] = field(default_factory=list)


def archived_records(workspace: Path) -> list[dict[str, Any]]:
    """Every archive line of the workspace, oldest file first."""
    return [
        record
        for path in sorted((workspace / "dialog").glob("*.jsonl"))
        for record in read_archive(path)
    ]


def formatted_text(message: dict[str, Any]) -> str:
    """The text of one OpenAI chat-completions message."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class HostDriver(Protocol):
    """One AgentScope major, as the reliability and invariant suites drive it."""

    name: str

    def hook(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        compactor: Any | None = None,
        on_event: EventCallback | None = None,
    ) -> Any:
        """The hook (middleware) of this major over ``workspace``."""
        ...

    def model(self, steps: Sequence[Any], *, context_size: int) -> Any:
        """A scripted chat model replaying ``steps`` (blocks, callables or exceptions)."""
        ...

    async def agent(
        self,
        hook: Any,
        model: Any,
        tools: Sequence[Callable[..., str]] = (),
        *,
        system_prompt: str = "You are a careful assistant.",
        name: str = "assistant",
    ) -> Any:
        """A real agent with the hook, its tools (``read_file`` ...) and ``tools``."""
        ...

    async def ask(self, agent: Any, text: str | Sequence[str], *, pinned: bool = False) -> str:
        """One user turn; the reply's text (``pinned``: the request is pinned; a sequence:
        one text block each)."""
        ...

    async def reply(self, agent: Any, text: str) -> Reply:
        """One user turn as the user sees it: the reply's text and the status lines shown
        on the way (2.x: the streamed status events; 1.x: the status messages printed)."""
        ...

    async def seed(self, agent: Any, turns: int, result_bytes: int = 1500) -> None:
        """Put ``turns`` finished request/tool/answer turns into the context."""
        ...

    async def set_summary(self, agent: Any, text: str) -> None:
        """The summary the model receives, as if an earlier compaction had made it (from
        :data:`SEED_SUMMARY_SOURCES`)."""
        ...

    async def summary(self, agent: Any) -> str:
        """The summary the model receives now ("" when none)."""
        ...

    def text_step(self, text: str, thinking: str = "") -> list[Any]:
        """A model step answering with text (after a thinking block when given)."""
        ...

    def tool_step(self, calls: Sequence[ToolCall], thinking: str = "") -> list[Any]:
        """A model step making ``calls`` (several at once: parallel calls)."""
        ...

    def context_keys(self, agent: Any) -> list[str]:
        """The keys of every part in the agent's context."""
        ...

    def context_roles(self, agent: Any) -> list[str]:
        """The role of every message in the agent's context."""
        ...

    def archived_keys(self, workspace: Path) -> list[str]:
        """The keys of every part archived in ``workspace``, oldest first."""
        ...

    async def provider_inputs(self, call: Any) -> dict[str, list[dict[str, Any]]]:
        """A recorded model call's input formatted for ``openai``, ``anthropic``, ``dashscope``."""
        ...

    def tool_schemas(self, call: Any) -> str:
        """The tool schemas of a recorded model call as JSON ("" when none: a compactor)."""
        ...

    async def engine_state(self, hook: Any, agent: Any) -> MutableMapping[str, Any]:
        """The engine's per-agent state (saved with the agent: calibration, pending buffer)."""
        ...

    async def report(self, hook: Any, agent: Any) -> TokenReport:
        """What the model would receive now, by part."""
        ...

    def save_state(self, agent: Any) -> str:
        """The agent's state as the host saves it with a session (JSON text)."""
        ...

    async def load_state(self, agent: Any, saved: str) -> None:
        """Restore a state saved by :meth:`save_state` (a restart)."""
        ...


def available_drivers() -> list[HostDriver]:
    """The drivers of the installed AgentScope major (both majors cannot be installed at
    once; each test environment runs the suite against its own)."""
    import agentscope

    major = int(str(agentscope.__version__).split(".")[0])
    if major >= 2:
        from tests.reliability.as2_driver import As2Driver

        return [As2Driver()]
    from tests.reliability.as1_driver import As1Driver

    return [As1Driver()]
