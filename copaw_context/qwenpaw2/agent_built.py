"""After QwenPaw 2.2 builds an agent: QwenPaw's tool-result pruning left to copaw-context.

QwenPaw puts its ``ToolResultPruningMiddleware`` outermost on every agent: after each tool
call it cuts the fresh result and every older one by its byte limits, writing its own
offload files and notices. On an agent copaw-context runs on that would cut results a
second time, behind the engine's back (the engine counts and cuts them itself, by the same
``tool_result_pruning_config`` settings, and keeps what it cut followable to the full
text). :class:`AgentBuilt`, a ``POST_AGENT_BUILD`` runtime hook, takes that middleware off
such an agent; every other agent keeps it. (Results of tools QwenPaw runs in the background
still pass its pruning: they reach the agent another way.)
"""

from __future__ import annotations

from typing import Any

from qwenpaw.agents.middlewares import ToolResultPruningMiddleware
from qwenpaw.runtime.hooks import HookBase, HookContext, HookResult
from qwenpaw.runtime.phases import Phase

from copaw_context.agentscope2.hook_lists import HOOK_LISTS
from copaw_context.qwenpaw2.hook import QwenPawHook

__all__ = ["AgentBuilt", "leave_tool_results_to_us", "our_hook"]


def our_hook(agent: Any) -> QwenPawHook | None:
    """The copaw-context middleware on ``agent``, if QwenPaw built it with one."""
    for attribute in HOOK_LISTS.values():
        for middleware in getattr(agent, attribute, None) or ():
            if isinstance(middleware, QwenPawHook):
                return middleware
    return None


def leave_tool_results_to_us(agent: Any) -> int:
    """Take QwenPaw's tool-result pruning off ``agent``; how many hook lists held it."""
    removed = 0
    for attribute in HOOK_LISTS.values():
        chain = getattr(agent, attribute, None)
        if not isinstance(chain, list):
            continue
        kept = [m for m in chain if not isinstance(m, ToolResultPruningMiddleware)]
        removed += len(chain) - len(kept)
        chain[:] = kept
    return removed


class AgentBuilt(HookBase):
    """``POST_AGENT_BUILD``: an agent with our middleware keeps no other tool-result cut."""

    phase = Phase.POST_AGENT_BUILD
    name = "copaw_context_agent_built"
    priority = 20  # after QwenPaw's own (agent_contextvars_setup, 10)

    async def run(self, ctx: HookContext) -> HookResult:
        agent = ctx.agent
        if agent is not None and our_hook(agent) is not None:
            leave_tool_results_to_us(agent)
        return HookResult()
