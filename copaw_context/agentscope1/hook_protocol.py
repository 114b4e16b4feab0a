"""What the 1.x wiring (``attach.py``, ``model.py``) needs of the hook, so it imports no hook."""

from __future__ import annotations

from collections.abc import Callable, MutableSet
from typing import Any, Protocol, TypeVar

from copaw_context.agentscope1.session import AgentScope1Session
from copaw_context.core.commands import ChatCommand
from copaw_context.core.engine import ContextEngine
from copaw_context.core.host.protocol import Window
from copaw_context.core.tools.read_entries import ReadEntries

__all__ = ["As1Hook"]

T = TypeVar("T")


class As1Hook(Protocol):
    """The members of ``MemoryCompactionHook`` (1.x) that its wiring calls."""

    @property
    def engine(self) -> ContextEngine: ...

    @property
    def is_light(self) -> bool: ...

    @property
    def read_entries(self) -> ReadEntries: ...

    def scratch(self, agent: Any) -> dict[str, Any]: ...

    def window(self, agent: Any) -> Window: ...

    def tool_functions(self) -> list[Any]: ...

    async def session(self, agent: Any) -> AgentScope1Session: ...

    async def pre_reasoning(self, agent: Any, kwargs: dict[str, Any]) -> None: ...

    async def post_acting(self, agent: Any, kwargs: dict[str, Any], output: Any) -> None: ...

    async def command_reply(self, agent: Any, command: ChatCommand) -> str: ...

    async def memory_prompt(self, prompt: str, window: int, *, once: bool = False) -> str: ...

    def repaired(
        self, agent: Any, messages: T, repair: Callable[[T, MutableSet[str]], T | None]
    ) -> T: ...
