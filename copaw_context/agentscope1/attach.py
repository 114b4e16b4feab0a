"""Attach a hook to an AgentScope 1.x ``ReActAgent``.

What changes on the agent instance (its class and other agents are untouched):

- instance hooks ``pre_reasoning`` and ``post_acting`` named ``copaw_context``;
- ``agent.reply`` is wrapped: a lone user message holding a chat command is answered by the
  engine and printed, without the model and without entering the memory. A ``pre_reply`` hook
  cannot do this (its return value only replaces the arguments: the reply would still run);
- ``agent._summarizing`` (the model call after ``max_iters``, which runs no ``pre_reasoning``
  hook) is wrapped to run the engine's pipeline first, so that call fits the window too;
- ``agent.formatter`` and ``agent.model`` are wrapped (see :mod:`proxies`): MEMORY.md in the
  system prompt and the input's tool pairing repaired (``repair.py``); usage calibration and
  overflow recovery around the reasoning call;
- ``read_file`` and the memory tools join the toolkit (a tool of the same name is replaced,
  with a warning: QwenPaw's own ``read_file`` cannot follow our notices' ``line_offset``);
- the state attribute ``copaw_context`` is registered (saved with ``state_dict()``).
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

from agentscope.message import Msg

from copaw_context.agentscope1.hook_protocol import As1Hook
from copaw_context.agentscope1.model import call_model
from copaw_context.agentscope1.proxies import ContextModelProxy, MemoryPromptFormatter
from copaw_context.agentscope1.repair import repaired_msgs
from copaw_context.agentscope1.state import STATE_ATTRIBUTE, register_agent_state
from copaw_context.core.host.hook_base import Attached, refuse_another_hook, require_members
from copaw_context.core.host.hook_events import (
    user_command,
    warn_replacing_tool,
    warn_state_dropped,
)

__all__ = ["HOOK_NAME", "attach", "attached_to"]

H = TypeVar("H", bound=As1Hook)

HOOK_NAME = "copaw_context"
"""Name of our instance hooks (``pre_reasoning``, ``post_acting``)."""

_OWNER = "_copaw_context_hook"


def attached_to(agent: Any) -> object:
    """What :func:`attach` attached to ``agent`` (``None`` when nothing)."""
    return getattr(agent, _OWNER, None)


def _check_agent(agent: Any, hook: As1Hook) -> None:
    members = ("register_instance_hook", "memory", "toolkit", "formatter", "model")
    require_members(agent, members, "an AgentScope 1.x ReActAgent")
    if not isinstance(getattr(agent.memory, "content", None), list):
        raise TypeError(
            f"attach() needs the agent's memory to be an InMemoryMemory (or a subclass): the "
            f"context is edited in place; {type(agent.memory).__name__} keeps it elsewhere"
        )
    compression = getattr(agent, "compression_config", None)
    hook.refuse_host_compression(
        compression is not None and bool(getattr(compression, "enable", False)),
        "ReActAgent compression_config.enable",
        "Build the agent without compression_config",
    )
    refuse_another_hook([attached_to(agent)], hook)


def _wrap_reply(agent: Any, hook: As1Hook) -> None:
    original = agent.reply

    @functools.wraps(original)
    async def reply(*args: Any, **kwargs: Any) -> Any:
        command = user_command(args[0] if args else kwargs.get("msg"), Msg)
        if command is None:
            return await original(*args, **kwargs)
        answer = Msg(agent.name, await hook.command_reply(agent, command), "assistant")
        await agent.print(answer, True)
        return answer

    agent.reply = reply


def _wrap_summarizing(agent: Any, hook: As1Hook) -> None:
    # Private but unavoidable: ReActAgent's reply after max_iters calls the model through
    # _summarizing, with no hook before it. Pinned by tests/agentscope1/test_pins.py.
    original = getattr(agent, "_summarizing", None)
    if original is None:
        return

    @functools.wraps(original)
    async def summarizing(*args: Any, **kwargs: Any) -> Any:
        await hook.before_unhooked_call(agent, lambda: hook.pre_reasoning(agent, {}))
        return await original(*args, **kwargs)

    agent._summarizing = summarizing


def _register_tools(agent: Any, hook: As1Hook) -> None:
    toolkit = agent.toolkit
    for function in hook.tool_functions():
        name = function.__name__
        if toolkit.tools.get(name) is not None:
            warn_replacing_tool(name)
        toolkit.register_tool_function(
            function,
            namesake_strategy="override",
            postprocess_func=hook.read_entries.postprocess if name == "read_file" else None,
        )


def attach(agent: Any, hook: H) -> Attached[H]:
    """Attach ``hook`` to a 1.x ``ReActAgent``, done when this returns: call it plainly or
    await it (``await attach(agent, hook)`` gives the hook). Idempotent: twice changes
    nothing; an agent it cannot work with fails here."""
    _check_agent(agent, hook)
    if attached_to(agent) is hook:
        return Attached(hook)
    if agent.memory.content and not hasattr(agent, STATE_ATTRIBUTE):
        warn_state_dropped(agent.name, len(agent.memory.content))
    register_agent_state(agent)
    agent.register_instance_hook("pre_reasoning", HOOK_NAME, hook.pre_reasoning)
    agent.register_instance_hook("post_acting", HOOK_NAME, hook.post_acting)
    _wrap_reply(agent, hook)
    _wrap_summarizing(agent, hook)

    async def memory_prompt(prompt: str) -> str:
        return await hook.memory_prompt(prompt, hook.window(agent).tokens, once=True)

    def repair(msgs: list[Msg]) -> list[Msg]:
        return hook.repaired(agent, msgs, repaired_msgs)

    agent.formatter = MemoryPromptFormatter(agent.formatter, memory_prompt, repair)

    async def handle(inner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return await call_model(hook, agent, inner, args, kwargs)

    agent.model = ContextModelProxy(agent.model, handle)
    _register_tools(agent, hook)
    setattr(agent, _OWNER, hook)
    return Attached(hook)
