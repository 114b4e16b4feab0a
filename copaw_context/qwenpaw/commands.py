"""``/compact [note]`` in QwenPaw's chat, answered by copaw-context (a plugin control command).

QwenPaw runs its own ``/compact`` (and ``/new``, ``/clear``, ``/history``, ...) without an
agent, and writes its own reply around what the context manager's ``compact_context``
returns. A plugin's control commands are dispatched before those, with the text after the
command in ``args["_raw_args"]``; :class:`CompactCommand` takes ``/compact`` there, loads the
session's memory, runs our ``/compact`` with the note, saves the memory and replies with our
reply and summary. When the workspace's context manager is not ours (another backend in
agent.json), it runs QwenPaw's own ``/compact`` instead, as if the plugin were not there.
"""

from __future__ import annotations

from typing import Any

from agentscope.message import Msg
from qwenpaw.agents.command_handler import CommandHandler
from qwenpaw.app.runner.control_commands import BaseControlCommandHandler, ControlContext

from copaw_context.core.commands import ChatCommand
from copaw_context.qwenpaw.manager import CopawContextManager

__all__ = ["CompactCommand", "qwenpaw_conversation_command"]


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


class CompactCommand(BaseControlCommandHandler):
    """``/compact [note]``: copaw-context's compaction, reply and summary."""

    command_name = "/compact"
    description = "Compact the conversation context (copaw-context); optional note"

    async def handle(self, context: ControlContext) -> str:
        note = str(context.args.get("_raw_args", "") or "").strip()
        runner = context.workspace.runner
        manager = context.workspace.context_manager
        if not isinstance(manager, CopawContextManager):
            query = f"/compact {note}".strip()
            return await qwenpaw_conversation_command(runner, context, query)
        return await manager.run_session_command(
            runner,
            ChatCommand("compact", note),
            session_id=context.session_id,
            user_id=context.user_id,
            channel=_request_channel(context),
        )
