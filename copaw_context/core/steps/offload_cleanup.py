"""The offload manifest and TTL cleanup: what this session's context names is recorded, so
every session's cleanup (at most hourly) keeps it; the rest of ``tool_result/`` expires."""

from __future__ import annotations

import logging

from copaw_context.core.context.step import Turn
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.toolresults.offload_names import referenced_offload_names

__all__ = ["OffloadCleanup", "OffloadManifest", "OffloadReferences"]

logger = logging.getLogger("copaw_context")


class OffloadReferences:
    """The offload file names a session's context references, and what keeps them."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx

    async def names(self, host: HostSession) -> set[str]:
        """The offload file names the context (and its summary) references; the ledger
        keeps each part's names, so a step views only what changed."""
        ledger, _ = await self.ctx.sync(host)
        summaries = [host.summary_text(), self.ctx.state(host).summary or ""]
        return ledger.offload_names() | referenced_offload_names(summaries)

    async def record(self, host: HostSession) -> set[str] | None:
        """Update the session's manifest, so other sessions' cleanups keep what it names
        (None, logged, when the context could not be read)."""
        try:
            names = await self.names(host)
            await self.ctx.store.record_references(self.ctx.state(host).offload_refs_id, names)
        except Exception:
            logger.exception("copaw-context: recording the offload references failed")
            return None
        return names

    async def cleanup(self, host: HostSession) -> None:
        """The manifest, then the TTL cleanup (at most hourly) keeping what any names."""
        names = await self.record(host)
        if names is None:
            return  # without this context's names nothing is safe to delete
        try:
            await self.ctx.store.maybe_cleanup(lambda: names)
        except Exception:
            logger.exception("copaw-context: offload cleanup failed")


class OffloadCleanup:
    """Pipeline step ``cleanup``: the manifest, then the TTL cleanup."""

    name = "cleanup"

    def __init__(self, references: OffloadReferences) -> None:
        self.references = references

    async def run(self, host: HostSession, turn: Turn) -> None:
        await self.references.cleanup(host)


class OffloadManifest:
    """Pipeline step ``manifest``, last: the names pruning and compaction left in the context."""

    name = "manifest"

    def __init__(self, references: OffloadReferences) -> None:
        self.references = references

    async def run(self, host: HostSession, turn: Turn) -> None:
        await self.references.record(host)
