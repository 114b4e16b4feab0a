"""What the 1.x wiring (``attach.py``, ``model.py``) needs of the hook, so it imports no hook:
``core.host.hook_base.HookSurface`` and the 1.x hook's own members."""

from __future__ import annotations

from typing import Any, Protocol

from copaw_context.agentscope1.session import AgentScope1Session
from copaw_context.core.host.hook_base import HookSurface
from copaw_context.core.host.protocol import Window
from copaw_context.core.tools.read_entries import ReadEntries

__all__ = ["As1Hook"]


class As1Hook(HookSurface, Protocol):
    """The members of ``MemoryCompactionHook`` (1.x) that its wiring calls."""

    @property
    def read_entries(self) -> ReadEntries: ...

    def window(self, agent: Any) -> Window: ...

    def tool_functions(self) -> list[Any]: ...

    async def session(self, agent: Any) -> AgentScope1Session: ...

    async def pre_reasoning(self, agent: Any, kwargs: dict[str, Any]) -> None: ...

    async def post_acting(self, agent: Any, kwargs: dict[str, Any], output: Any) -> None: ...
