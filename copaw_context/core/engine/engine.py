"""``ContextEngine``: the light context pipeline for any host framework.

The engine composes the steps of ``core/steps/`` over one :class:`StepContext`; its pipeline
is the tuple :attr:`ContextEngine.pipeline`, run in order before each reasoning step. It
talks to the agent only through a :class:`~copaw_context.core.host.protocol.HostSession` and imports
no host framework. An adapter calls the methods below and nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from copaw_context.core.commands.run import Commands
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.context.report import Limits, TokenReport
from copaw_context.core.context.step import Step, Turn
from copaw_context.core.context.step_context import CompactionListener, StepContext
from copaw_context.core.events import ContextEvent, EventCallback
from copaw_context.core.host.protocol import HostSession
from copaw_context.core.memory.service import MemoryService
from copaw_context.core.steps import (
    AttachMemory,
    Compact,
    FlushPendingArchive,
    InputMeter,
    ModelCaller,
    OffloadCleanup,
    OffloadManifest,
    OffloadReferences,
    OverflowRecovery,
    Pruner,
)
from copaw_context.core.steps.model_call import UsageReader
from copaw_context.core.toolresults.policy import OutputPart
from copaw_context.core.workspace import durable

__all__ = ["ContextEngine"]

_I = TypeVar("_I")


class ContextEngine:
    """Light context management for the agents of one workspace.

    ``pipeline`` is what runs before each reasoning step, in order: ``memory`` (long-term
    memory gets the summary model), ``flush`` (a deferred archive is written), ``cleanup``
    (offload manifest and TTL cleanup), ``prune`` (stage 2), ``compact`` (count; over the
    threshold, compact) and ``manifest`` (the offload names the context now holds).
    """

    def __init__(
        self,
        config: RunningConfig,
        workspace: Path,
        *,
        on_event: EventCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.context = StepContext(config, workspace, on_event=on_event, clock=clock)
        references = OffloadReferences(self.context)
        self.memory_step = AttachMemory(self.context)
        self.pruner = Pruner(self.context)
        self.input_meter = InputMeter(self.context)
        self.recovery = OverflowRecovery(self.context)
        self.model_caller = ModelCaller(self.context, self.input_meter, self.recovery)
        self.commands = Commands(self.context, references)
        self.pipeline: tuple[Step, ...] = (
            self.memory_step,
            FlushPendingArchive(self.context),
            OffloadCleanup(references),
            self.pruner,
            Compact(self.context),
            OffloadManifest(references),
        )

    @property
    def config(self) -> RunningConfig:
        """The running settings (``agent.json``'s ``running`` section)."""
        return self.context.config

    @property
    def workspace(self) -> Path:
        return self.context.workspace

    @property
    def memory(self) -> MemoryService:
        """Long-term memory: its tools (``tool_functions()``) go to the agent's toolkit."""
        return self.context.memory

    @property
    def is_light(self) -> bool:
        """Whether this engine manages the context (``context_manager_backend == "light"``)."""
        return self.context.is_light

    async def on_tool_result(
        self,
        host: HostSession,
        tool_name: str | None,
        tool_input: str | None,
        parts: list[OutputPart],
        meta: dict[str, Any],
    ) -> tuple[list[OutputPart], dict[str, Any]]:
        """A host calls this with each fresh tool result before it stores it: stage 1 returns
        the parts to store (cut, the full text saved) and this package's metadata entry."""
        return await self.pruner.bound_fresh(host, tool_name, tool_input, parts, meta)

    async def before_reasoning(
        self, host: HostSession, *, note: str = "", limits: Limits | None = None
    ) -> ContextEvent | None:
        """A host calls this before each reasoning step: runs :attr:`pipeline`; returns the
        event of a compaction or cut, if one happened."""
        turn = Turn(note=note, limits=limits)
        self.context.ledger(host).expect_outside_edits(everywhere=host.others_may_edit())
        for step in self.pipeline:
            await step.run(host, turn)
        return turn.event

    async def call_model(
        self,
        host: HostSession,
        model_input: _I,
        send: Callable[[_I], Awaitable[Any]],
        rebuild: Callable[[], Awaitable[_I]],
        usage: UsageReader,
        *,
        calibrate: bool = True,
    ) -> Any:
        """A host makes its model call through this: the input is measured (results become
        seen), ``send(model_input)``; when the provider rejects the input as too long, the
        context is compacted harder and ``send(await rebuild())`` goes once more; ``usage``
        reads the response (a stream: its last chunk) for calibration, unless not
        ``calibrate`` (a fallback model's usage is not the agent's model's)."""
        return await self.model_caller.call(
            host, model_input, send, rebuild, usage, calibrate=calibrate
        )

    async def run_command(self, host: HostSession, name: str, argument: str) -> str:
        """A host calls this for a lone user message that ``parse_command`` recognises
        (``/compact``, ``/context``, ``/clear``, ``/new``, ``/history``, ...): the reply."""
        self.memory_step.attach(host)
        self.context.ledger(host).expect_outside_edits()
        return await self.commands.run(host, name, argument)

    async def report(self, host: HostSession, limits: Limits | None = None) -> TokenReport:
        """What the model would receive for the host's current state, counted."""
        self.context.ledger(host).expect_outside_edits()
        return await self.context.report(host, limits)

    def add_compaction_listener(self, listener: CompactionListener) -> None:
        """Call ``listener`` with every batch of messages that leaves the context."""
        self.context.listeners.append(listener)

    async def close(self) -> None:
        """A host calls this when the agent is done: stops background work (early saves, the
        memory schedule, pending memory summaries); the saved outputs are on disk after it."""
        await self.context.store.drain()
        await durable.durable()
        await self.context.memory.close()  # its summaries may still write to the store
        await self.context.close_store()
