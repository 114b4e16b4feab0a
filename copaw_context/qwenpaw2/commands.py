"""``/compact [note]``, ``/context``, ``/clear`` and ``/new`` in QwenPaw 2.2's chat, answered
by copaw-context.

QwenPaw 2.2 dispatches slash commands before it builds an agent: its own ``/compact`` runs
AgentScope's native compression on a bare temporary agent, and a plugin cannot register a
command under a built-in's name. A ``PRE_DISPATCH`` runtime hook runs before that dispatch
and may end the request with its own reply (``HookResult(SHORT_CIRCUIT, payload=Msg)``):
:class:`ChatCommands` takes our commands there. For each it loads the session as QwenPaw's
session hook does (``session.load_session_state`` into ``ctx.session_state``), builds the
request's agent with QwenPaw's own ``AgentBuilder`` (so our middleware, the system prompt
and the tools are what the next reply would have), runs our command on it, saves the
session as QwenPaw saves it after a reply (``agent.state_dict()`` and the mode state) and
replies with our text (for ``/compact``: our reply and our summary). What ``/compact``
removed from the context goes to QwenPaw's memory manager, as its own ``/compact`` hands it.

``/clear`` and ``/new`` archive the context in our format (QwenPaw's own would write its own
lines into the same ``dialog/`` files) and empty it; QwenPaw's own command then runs on the
emptied session for everything else it resets (its modes, the plan, its auto-memory turns),
and the reply is ours with QwenPaw's metadata (the console clears its view by it). ``/new``
first hands the conversation to QwenPaw's memory manager, as QwenPaw's own ``/new`` does.

Where copaw-context is not used for the agent (``strategy`` not ``"native"``, ...), QwenPaw's
own commands stay QwenPaw's, as if the plugin were not there, and ``/context`` says why
copaw-context is not in charge.
"""

from __future__ import annotations

import logging
from typing import Any

from agentscope.message import AssistantMsg, Msg, TextBlock
from qwenpaw.agents.acp.meta import ACP_EPHEMERAL_META_KEY
from qwenpaw.agents.middlewares import discard_auto_memory_turns
from qwenpaw.config.config import load_agent_config
from qwenpaw.runtime._state_utils import StateProxy
from qwenpaw.runtime.builder import AgentBuilder
from qwenpaw.runtime.hooks import HookAction, HookBase, HookContext, HookResult
from qwenpaw.runtime.phases import Phase
from qwenpaw.utils.io_utils import run_sync_io

from copaw_context.core.commands import ChatCommand, parse_command
from copaw_context.qwenpaw2.agent_built import leave_tool_results_to_us, our_hook
from copaw_context.qwenpaw2.factory import Middlewares, workspace_of

__all__ = ["ROUTED", "ChatCommands", "command_of"]

logger = logging.getLogger("copaw_context")

ROUTED = {
    "compact": "Compact the conversation context (copaw-context); optional note",
    "context": "Show the tokens the model receives now, by part (copaw-context)",
    "clear": "Archive and clear the context and the summary (copaw-context, then QwenPaw)",
    "new": "Archive the context and start a new session (copaw-context, then QwenPaw)",
}
"""The chat commands copaw-context answers in QwenPaw 2.2, with what they do."""

QWENPAWS_OWN = frozenset({"compact", "clear", "new"})
"""Those of them QwenPaw has itself (they stay QwenPaw's where copaw-context is not used)."""


def command_of(ctx: HookContext) -> ChatCommand | None:
    """Our command in the request's last message (the one QwenPaw's dispatch reads), if any."""
    if not ctx.input_msgs:
        return None
    last = ctx.input_msgs[-1]
    text = last.get_text_content() if isinstance(last, Msg) else None
    command = parse_command(text)
    return command if command is not None and command.name in ROUTED else None


def _identity(ctx: HookContext) -> tuple[str, str]:
    """(user id, channel) of the request, as QwenPaw's session hooks read them."""
    request = ctx.request
    user_id = getattr(request, "user_id", "") or ctx.session_id
    return user_id, getattr(request, "channel", "") or ""


def _ephemeral(ctx: HookContext) -> bool:
    """An ACP request that QwenPaw neither loads nor saves a session for."""
    context = getattr(ctx.request, "request_context", None)
    value = context.get(ACP_EPHEMERAL_META_KEY) if isinstance(context, dict) else None
    return value is True or (isinstance(value, str) and value.lower() in {"1", "true", "yes"})


async def _load_session(ctx: HookContext) -> None:
    """The saved session into ``ctx.session_state`` (and its mode state), as QwenPaw's
    ``SessionLoadHook`` loads it before the agent is built."""
    session = getattr(ctx.workspace, "session", None)
    if session is None or _ephemeral(ctx):
        return
    user_id, channel = _identity(ctx)
    proxy = StateProxy()
    await session.load_session_state(
        session_id=ctx.session_id, user_id=user_id, channel=channel, agent=proxy
    )
    if proxy.data:
        ctx.session_state = proxy.data
        mode_state = proxy.data.get("mode_state")
        if isinstance(mode_state, dict):
            ctx.mode_state = {**mode_state, **ctx.mode_state}


async def _save_session(ctx: HookContext, agent: Any) -> None:
    """The agent's state back to the session, as QwenPaw's ``SessionSaveHook`` saves it."""
    session = getattr(ctx.workspace, "session", None)
    if session is None or _ephemeral(ctx):
        return
    user_id, channel = _identity(ctx)
    proxy = StateProxy()
    proxy.data = agent.state_dict()
    proxy.data["mode_state"] = ctx.mode_state
    await session.save_session_state(
        session_id=ctx.session_id, user_id=user_id, channel=channel, agent=proxy
    )


def _to_memory(ctx: HookContext, agent: Any, before: list[Any], trigger: str) -> None:
    """What ``/compact`` or ``/new`` removed from the context, to QwenPaw's memory manager
    (as its own commands submit it), and those turns no longer pending for its auto-memory."""
    manager = getattr(ctx.workspace, "memory_manager", None)
    kept = {msg.id for msg in agent.state.context}
    removed = [msg for msg in before if msg.id not in kept]
    if manager is None or not removed:
        return
    try:
        manager.submit_auto_memory(messages=removed, trigger=trigger, session_id=ctx.session_id)
        discard_auto_memory_turns(agent.state, {msg.id for msg in removed})
    except Exception as exc:
        logger.warning("copaw-context: QwenPaw's memory did not take the compacted turns: %s", exc)


def _reply(name: str, text: str, metadata: dict[str, Any] | None = None) -> HookResult:
    msg = AssistantMsg(name=name, content=[TextBlock(text=text)], metadata=metadata or {})
    return HookResult(action=HookAction.SHORT_CIRCUIT, payload=msg)


async def _qwenpaws_own(ctx: HookContext) -> dict[str, Any]:
    """QwenPaw's own command for the request's text, run on the session as saved now; the
    metadata of its reply (its text is not shown)."""
    text = ctx.input_msgs[-1].get_text_content() or ""
    try:
        msg = await ctx.workspace.plugins.slash_command_registry.dispatch(text, ctx)
    except Exception as exc:
        logger.warning("copaw-context: QwenPaw's own %s failed after ours: %s", text, exc)
        return {}
    metadata = getattr(msg, "metadata", None)
    return dict(metadata) if isinstance(metadata, dict) else {}


class ChatCommands(HookBase):
    """``PRE_DISPATCH``: our commands answered before QwenPaw's slash dispatch."""

    phase = Phase.PRE_DISPATCH
    name = "copaw_context_commands"
    priority = 50  # after QwenPaw's own request set-up (cron 5, contextvars 10, checkpoints 20)

    def __init__(self, middlewares: Middlewares) -> None:
        self.middlewares = middlewares

    async def run(self, ctx: HookContext) -> HookResult:
        command = command_of(ctx)
        workspace = workspace_of(ctx)
        if command is None or workspace is None:
            return HookResult()
        agent_config = await run_sync_io(load_agent_config, ctx.agent_id)
        hook, why = self.middlewares.for_agent(workspace, agent_config)
        if hook is None:
            if command.name in QWENPAWS_OWN:
                return HookResult()  # QwenPaw's own command
            return _reply(
                agent_config.name or "QwenPaw",
                f"**/{command.name} is copaw-context's**, and copaw-context is not used for "
                f"this agent: {why}.",
            )
        await _load_session(ctx)
        agent = await AgentBuilder(app_services=ctx.app_services).build(ctx)
        try:
            built = our_hook(agent)
            if built is None:  # the factory failed (QwenPaw logged why)
                if command.name in QWENPAWS_OWN:
                    return HookResult()
                why = "copaw-context's middleware is not on this agent (QwenPaw's log says why)"
                return _reply(agent.name, f"**/{command.name} failed:** {why}.")
            leave_tool_results_to_us(agent)
            before = list(agent.state.context)
            text = await built.command_reply(agent, command)
            if command.name in ("compact", "new"):
                _to_memory(ctx, agent, before, command.name)
            await _save_session(ctx, agent)
            # QwenPaw's own /clear, /new after ours, once ours emptied the context (not when
            # ours refused: a tool call waiting for confirmation).
            then_qwenpaws = command.name in ("clear", "new") and not agent.state.context
        finally:
            await agent.close()
        metadata = await _qwenpaws_own(ctx) if then_qwenpaws else None
        return _reply(agent.name, text, metadata)
