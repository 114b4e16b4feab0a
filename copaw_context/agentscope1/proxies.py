"""What the 1.x hook puts in place of the agent's formatter and model.

1.x has no hook around the model call and builds the system prompt from ``sys_prompt``, a
read-only property over the private, saved ``_sys_prompt``. Both public attributes the agent
calls through, ``agent.formatter`` and ``agent.model``, are therefore wrapped on the
instance, delegating everything else to the original (``core.host.delegating.Delegating``):

- :class:`MemoryPromptFormatter` adds MEMORY.md after the system prompt of every request it
  formats (nothing saved with the agent changes, so a restored agent never gets it twice;
  ``EngineHook.memory_prompt``) and repairs the tool pairing of what it formats (see
  ``repair.py``);
- :class:`ContextModelProxy` hands each call to the hook, which measures the input, feeds the
  reported usage back and recovers once from a provider's "input too long" error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agentscope.formatter import FormatterBase
from agentscope.message import Msg
from agentscope.model import ChatModelBase

from copaw_context.core.host.delegating import Delegating

__all__ = ["ContextModelProxy", "MemoryPromptFormatter"]

ModelCallHandler = Callable[[Any, tuple[Any, ...], dict[str, Any]], Awaitable[Any]]


class MemoryPromptFormatter(Delegating, FormatterBase):
    """The agent's formatter, with ``memory_prompt`` (MEMORY.md added) applied to the system
    message it formats and ``repair`` to the messages (the memory is not changed)."""

    # Kept here, not on the inner formatter: agents that share one formatter object each
    # keep their own MEMORY.md.
    OWN = frozenset({"inner", "_memory_prompt", "_repair"})

    def __init__(
        self,
        inner: Any,
        memory_prompt: Callable[[str], Awaitable[str]],
        repair: Callable[[list[Msg]], list[Msg]] | None = None,
    ) -> None:
        Delegating.__init__(self, inner, _repair=repair)
        self._memory_prompt = memory_prompt

    async def format(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        msgs = kwargs.pop("msgs", args[0] if args else None)
        args = args[1:]
        if isinstance(msgs, list) and msgs and isinstance(msgs[0], Msg):
            first = msgs[0]
            if first.role == "system":
                text = first.get_text_content() or ""
                prompt = await self._memory_prompt(text)
                if prompt != text:
                    msgs = [Msg(first.name, prompt, "system"), *msgs[1:]]
            if self._repair is not None:
                msgs = self._repair(msgs)
        result: list[dict[str, Any]] = await self.inner.format(msgs, *args, **kwargs)
        return result


class ContextModelProxy(Delegating, ChatModelBase):
    """The agent's model; every call goes through ``handler(inner, args, kwargs)``."""

    OWN = frozenset({"inner", "_handler"})

    def __init__(self, inner: Any, handler: ModelCallHandler) -> None:
        # Not ChatModelBase.__init__: model_name and stream stay the inner model's.
        Delegating.__init__(self, inner, _handler=handler)

    @property
    def model_name(self) -> str:
        return str(self.inner.model_name)

    @model_name.setter
    def model_name(self, value: str) -> None:
        self.inner.model_name = value

    @property
    def stream(self) -> bool:
        return bool(self.inner.stream)

    @stream.setter
    def stream(self, value: bool) -> None:
        self.inner.stream = value

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return await self._handler(self.inner, args, kwargs)
