"""``CopawAgentContext``: QwenPaw's ``AgentContext`` carrying copaw-context's session state.

QwenPaw builds a new agent for every request and loads the saved session into it; its
command path builds no agent at all and loads and saves only ``agent.memory``. The memory is
therefore where our per-session state lives: the archive session id and the engine's state
(calibration, statistics, the bare summary, the pending-archive buffer, ...), saved by
``state_dict`` under ``"copaw_context"`` beside QwenPaw's ``content`` and
``_compressed_summary``, and restored by ``load_state_dict`` (a session QwenPaw saved before
gets a fresh entry). ``content`` stays QwenPaw's list of ``(Msg, marks)`` pairs.

What QwenPaw's commands remove from it is archived in our format (one format in
``dialog/*.jsonl``): ``clear_content`` and ``mark_messages_compressed`` hand the messages to
the manager's archiver before dropping them; ``clear_compressed_summary`` also forgets our
copy of the summary. After our ``compact_context`` the ``clear_content`` QwenPaw calls next
keeps what the compaction kept: those messages are not in the summary.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentscope.message import Msg
from qwenpaw.agents.context.agent_context import AgentContext

from copaw_context.agentscope1 import STATE_ATTRIBUTE
from copaw_context.core.context.state import SessionState

__all__ = ["STATE_KEY", "Archiver", "CopawAgentContext", "loaded_state"]

STATE_KEY = STATE_ATTRIBUTE
"""The ``state_dict`` key of our state (the 1.x adapter's agent attribute has the same name)."""

Archiver = Callable[["CopawAgentContext", list[Msg]], Awaitable[None]]
"""Writes messages leaving the context to the archive (raises when it cannot keep them)."""


def loaded_state(value: object) -> dict[str, Any]:
    """A saved entry (a copy), or a fresh one when ``value`` is not ours."""
    data = copy.deepcopy(value) if isinstance(value, dict) else {}
    if not isinstance(data.get("session_id"), str) or not data["session_id"]:
        data["session_id"] = uuid.uuid4().hex
    if not isinstance(data.get("engine"), dict):
        data["engine"] = {}
    return data


class CopawAgentContext(AgentContext):
    """QwenPaw's agent context with our state saved alongside."""

    content: list[tuple[Msg, list[str]]]

    def __init__(
        self,
        token_counter: Any,
        dialog_path: str | Path | None = None,
        *,
        archiver: Archiver | None = None,
    ) -> None:
        super().__init__(token_counter, dialog_path)
        self.copaw_state: dict[str, Any] = loaded_state(None)
        self._archiver = archiver
        self._kept_by_compaction = False

    # ------------------------------------------------------------ saved state
    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = super().state_dict()
        state[STATE_KEY] = copy.deepcopy(self.copaw_state)
        return state

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        super().load_state_dict(state_dict, strict)
        saved = state_dict.get(STATE_KEY) if isinstance(state_dict, dict) else None
        self.copaw_state = loaded_state(saved)

    # ------------------------------------------------------------ what leaves
    def kept_by_compaction(self) -> None:
        """Our compaction just ran: the next ``clear_content`` keeps what it kept."""
        self._kept_by_compaction = True

    async def _archive(self, messages: list[Msg]) -> None:
        if messages and self._archiver is not None:
            await self._archiver(self, messages)

    async def clear_content(self) -> None:
        """Archive every message (our format), then empty the context; right after our
        compaction, nothing (it archived what it summarised and kept the rest)."""
        if self._kept_by_compaction:
            self._kept_by_compaction = False
            return
        await self._archive([msg for msg, _ in self.content])
        self.content.clear()

    async def mark_messages_compressed(self, messages: list[Msg]) -> int:
        """Archive ``messages`` (our format) and remove them from the context."""
        if not messages:
            return 0
        await self._archive(list(messages))
        ids = {msg.id for msg in messages}
        before = len(self.content)
        self.content = [(msg, marks) for msg, marks in self.content if msg.id not in ids]
        return before - len(self.content)

    def clear_compressed_summary(self) -> None:
        """QwenPaw's ``/clear``, ``/new`` and ``/load_history`` drop the summary: ours too."""
        super().clear_compressed_summary()
        SessionState(self.copaw_state["engine"]).forget_conversation()
