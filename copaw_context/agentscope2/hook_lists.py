"""The middleware lists of an AgentScope 2.x ``Agent`` a hook joins when attached late."""

from __future__ import annotations

from typing import Any, Protocol

from copaw_context.core.host.hook_base import EngineHook
from copaw_context.core.host.hook_base import refuse_another_hook as refuse_another

__all__ = ["HOOK_LISTS", "has_other_middlewares", "join_hook_lists", "refuse_another_hook"]

# AgentScope 2.x computes each hook's middleware list once in Agent.__init__ and has no
# public add_middleware; these private lists are the only way in. Pinned by
# tests/agentscope2/test_agentscope_pins.py so a host change fails loudly.
HOOK_LISTS = {
    "on_reply": "_reply_middlewares",
    "on_reasoning": "_reasoning_middlewares",
    "on_check_permission": "_check_permission_middlewares",
    "on_acting": "_acting_middlewares",
    "on_model_call": "_model_call_middlewares",
    "on_system_prompt": "_system_prompt_middlewares",
    "on_compress_context": "_compress_context_middlewares",
}


class ListedHook(Protocol):
    """A middleware that says which hooks it implements (``MiddlewareBase`` does)."""

    def is_implemented(self, hook_name: str) -> bool: ...


def _middlewares(agent: Any) -> list[object]:
    chains = [getattr(agent, attribute, None) for attribute in HOOK_LISTS.values()]
    return [h for chain in chains if isinstance(chain, list) for h in chain]


def refuse_another_hook(agent: Any, hook: object) -> None:
    """One copaw-context hook per agent, as on 1.x (ValueError; ``core.host.hook_base``)."""
    refuse_another(_middlewares(agent), hook)


def has_other_middlewares(agent: Any) -> bool:
    """Whether ``agent`` runs a middleware that is not a copaw-context hook (it may edit the
    context between two of our steps)."""
    return any(not isinstance(h, EngineHook) for h in _middlewares(agent))


def join_hook_lists(agent: Any, hook: ListedHook) -> None:
    """Add ``hook`` to each of ``agent``'s middleware lists for the hooks it implements
    (idempotent); another copaw-context hook already there is refused (ValueError)."""
    if getattr(agent, "toolkit", None) is None:
        raise TypeError(
            f"attach() needs an AgentScope 2.x Agent; {type(agent).__name__} has no toolkit"
        )
    refuse_another_hook(agent, hook)
    for hook_name, attribute in HOOK_LISTS.items():
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
