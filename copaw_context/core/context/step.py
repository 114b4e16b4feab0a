"""What a pipeline step is: a named object the engine runs, in order, before each reasoning step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from copaw_context.core.context.report import Limits
from copaw_context.core.events import ContextEvent
from copaw_context.core.host.protocol import HostSession

__all__ = ["Step", "Turn"]


@dataclass(slots=True)
class Turn:
    """One pass of the pipeline: what the caller asks (a ``/compact`` note, other limits) and
    the event a step reports (a compaction, a cut), which ``before_reasoning`` returns."""

    note: str = ""
    limits: Limits | None = None
    event: ContextEvent | None = None


@runtime_checkable
class Step(Protocol):
    """One step of the pre-reasoning pipeline (see ``ContextEngine.pipeline``)."""

    name: str
    """A short name, as in ``docs/architecture.md`` (``"prune"``, ``"compact"``, ...)."""

    async def run(self, host: HostSession, turn: Turn) -> None:
        """Do this step's work on the host's context; record what happened on ``turn``."""
        ...
