"""``/compact [note]`` and ``/context`` in QwenPaw's chat, answered by copaw-context (plugin
control commands).

QwenPaw runs its own ``/compact`` (and ``/new``, ``/clear``, ``/history``, ...) without an
agent, and writes its own reply around what the context manager's ``compact_context``
returns; ``/context`` is no QwenPaw command (it would go to the model). A plugin's control
commands are dispatched before QwenPaw's conversation commands, with the text after the
command in ``args["_raw_args"]``. :class:`ChatCommandHandler` takes a command there, loads
the session's memory, runs our command, saves the memory and replies with our text (for
``/compact``: our reply and our summary). When the workspace's context manager is not ours
(another backend in agent.json), ``/compact`` is QwenPaw's own, as if the plugin were not
there, and ``/context`` says that copaw-context is not in charge.
"""

from __future__ import annotations

from typing import Any

from agentscope.message import Msg
from qwenpaw.agents.command_handler import CommandHandler
from qwenpaw.app.runner.control_commands import BaseControlCommandHandler, ControlContext

from copaw_context.core.commands import ChatCommand
from copaw_context.qwenpaw.manager import CopawContextManager

__all__ = ["CONTROL_COMMANDS", "ChatCommandHandler", "qwenpaw_conversation_command"]

CONTROL_COMMANDS = {
    "compact": "Compact the conversation context (copaw-context); optional note",
    "context": "Show the tokens the model receives now, by part (copaw-context)",
}
"""The chat commands the plugin answers, with the description QwenPaw advertises."""


def _request_channel(context: ControlContext) -> str:
    channel = getattr(context.payload, "channel", None)
    if isinstance(channel, str) and channel:
        return channel
    return str(getattr(context.channel, "channel", "") or "")


async def qwenpaw_conversation_command(runner: Any, context: ControlContext, query: str) -> str:
    """QwenPaw's own handling of a conversation command (its command path, unchanged)."""
    channel = _request_channel(context)
    manager = runner.context_manager
    memory = manager.get_agent_context()
    state = await runner.session.get_session_state_dict(
        session_id=context.session_id, user_id=context.user_id, channel=channel
    )
    memory.load_state_dict(state.get("agent", {}).get("memory", {}), strict=False)
    handler = CommandHandler(
        agent_name=runner.agent_name,
        memory=memory,
        memory_manager=runner.memory_manager,
        context_manager=manager,
    )
    reply: Msg = await handler.handle_conversation_command(query)
    if context.session_id and context.user_id:
        await runner.session.update_session_state(
            session_id=context.session_id,
            key="agent.memory",
            value=memory.state_dict(),
            user_id=context.user_id,
            channel=channel,
        )
    return reply.get_text_content() or ""


class ChatCommandHandler(BaseControlCommandHandler):
    """``/<name> [argument]`` answered by copaw-context."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.command_name = f"/{name}"
        self.description = CONTROL_COMMANDS[name]

    async def handle(self, context: ControlContext) -> str:
        argument = str(context.args.get("_raw_args", "") or "").strip()
        runner = context.workspace.runner
        manager = context.workspace.context_manager
        if not isinstance(manager, CopawContextManager):
            if self.name in CommandHandler.SYSTEM_COMMANDS:
                query = f"{self.command_name} {argument}".strip()
                return await qwenpaw_conversation_command(runner, context, query)
            return (
                f"**/{self.name} is copaw-context's**, and this agent's context manager is "
                f"{type(manager).__name__} (running.context_manager_backend in agent.json)."
            )
        return await manager.run_session_command(
            runner,
            ChatCommand(self.name, argument),
            session_id=context.session_id,
            user_id=context.user_id,
            channel=_request_channel(context),
        )
