"""Pipeline step ``memory``, first: long-term memory gets the host's summary model and its
schedule starts (idempotent; the memory service does its work in the background)."""

from __future__ import annotations

from copaw_context.core.context.step import Turn
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.host.protocol import HostSession

__all__ = ["AttachMemory"]


class AttachMemory:
    """Give long-term memory the host's summary model and start its schedule.

    With the extractive compactor (no model calls for context management) the memory
    summariser stays off too, unless the host has a separate summary model.
    """

    name = "memory"

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx

    def attach(self, host: HostSession) -> None:
        uses_llm = self.ctx.settings.compactor == "llm"
        if uses_llm or host.has_separate_summary_model():
            self.ctx.memory.bind_model(host.compactor_model())
        self.ctx.memory.start()

    async def run(self, host: HostSession, turn: Turn) -> None:
        self.attach(host)
