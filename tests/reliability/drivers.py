"""Real agents for the reliability suite: one ``HostDriver`` per AgentScope major.

A driver builds an agent of its major with the hook and a scripted model, runs a reply, and
reads back what the suite checks: the context's part keys (``<msg id>/<type>:<block id>``,
as the adapter keys the parts it archives), the model inputs formatted per provider by the
host's own formatters, the engine's session state, and the agent's saved state (to restart
from it). The suite's agent tests take the ``driver`` fixture (``conftest.py``), which runs
them once per driver of :func:`available_drivers`.

``as2_driver.py`` drives AgentScope 2.x ``Agent`` s, ``as1_driver.py`` AgentScope 1.x
``ReActAgent`` s; each test environment runs the agent tests against its own major.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from copaw_context.core.config import RunningConfig
from copaw_context.core.events import EventCallback
from copaw_context.core.report import TokenReport

__all__ = ["HostDriver", "ToolCall", "available_drivers"]

ToolCall = tuple[str, dict[str, Any], str | None]
"""A tool call a scripted step makes: (tool name, arguments, call id or None for a fresh one)."""


class HostDriver(Protocol):
    """One AgentScope major, as the reliability suite drives it."""

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

    def text_step(self, text: str, thinking: str = "") -> list[Any]:
        """A model step answering with text (after a thinking block when given)."""
        ...

    def tool_step(self, calls: Sequence[ToolCall], thinking: str = "") -> list[Any]:
        """A model step making ``calls`` (several at once: parallel calls)."""
        ...

    def context_keys(self, agent: Any) -> list[str]:
        """The keys of every part in the agent's context."""
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
