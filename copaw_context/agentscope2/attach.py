"""Attach a hook to an AgentScope 2.x agent that is already built."""

from __future__ import annotations

from typing import Any

from copaw_context.agentscope2.middleware import MemoryCompactionHook
from copaw_context.core.hook_base import ANOTHER_HOOK, Attached

__all__ = ["attach", "refuse_another_hook"]

# AgentScope 2.x computes each hook's middleware list once in Agent.__init__ and has no
# public add_middleware; these private lists are the only way in. Pinned by
# tests/test_agentscope_pins.py so a host change fails loudly.
_HOOK_LISTS = {
    "on_reply": "_reply_middlewares",
    "on_reasoning": "_reasoning_middlewares",
    "on_check_permission": "_check_permission_middlewares",
    "on_acting": "_acting_middlewares",
    "on_model_call": "_model_call_middlewares",
    "on_system_prompt": "_system_prompt_middlewares",
    "on_compress_context": "_compress_context_middlewares",
}


def refuse_another_hook(agent: Any, hook: MemoryCompactionHook) -> None:
    """One copaw-context hook per agent, as on 1.x (ValueError): a second one would run a
    second pipeline over the same context and put a second MEMORY.md into the prompt."""
    chains = [getattr(agent, attribute, None) for attribute in _HOOK_LISTS.values()]
    for chain in chains:
        if isinstance(chain, list) and any(
            isinstance(other, MemoryCompactionHook) and other is not hook for other in chain
        ):
            raise ValueError(ANOTHER_HOOK)


def attach(agent: Any, hook: MemoryCompactionHook) -> Attached[MemoryCompactionHook]:
    """Add ``hook`` to ``agent``'s middlewares now, and its tools (``read_file``, memory) to
    the toolkit before the agent's next reply (at once when the result is awaited).

    Works called plainly or awaited (``await attach(agent, hook)`` gives the hook); a host
    without the middleware lists fails here. Idempotent: twice changes nothing; another
    copaw-context hook already on ``agent`` is refused (ValueError), as on 1.x.
    """
    if getattr(agent, "toolkit", None) is None:
        raise TypeError(
            f"attach() needs an AgentScope 2.x Agent; {type(agent).__name__} has no toolkit"
        )
    refuse_another_hook(agent, hook)
    for hook_name, attribute in _HOOK_LISTS.items():
        if not hook.is_implemented(hook_name):
            continue
        chain = getattr(agent, attribute, None)
        if not isinstance(chain, list):
            raise RuntimeError(
                f"attach(): this AgentScope version has no Agent.{attribute} list; build the "
                "agent with Agent(..., middlewares=[hook]) instead"
            )
        if hook not in chain:
            chain.append(hook)
    hook.tools_pending(agent)

    async def finish() -> None:
        await hook.add_tools(agent)

    return Attached(hook, finish)
