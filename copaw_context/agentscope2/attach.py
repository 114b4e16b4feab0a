"""Attach a hook to an AgentScope 2.x agent that is already built."""

from __future__ import annotations

from typing import Any

from copaw_context.agentscope2.middleware import MemoryCompactionHook

__all__ = ["attach"]

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


async def attach(agent: Any, hook: MemoryCompactionHook) -> MemoryCompactionHook:
    """Add ``hook`` to ``agent``'s middlewares and its ``read_file`` tool to the toolkit.

    Idempotent: attaching the same hook twice changes nothing.
    """
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
    for tool in await hook.list_tools():
        if await agent.toolkit.get_tool(tool.name) is None:
            await agent.toolkit.add_tool(tool)
    return hook
