"""A host's compactor agents, built when none is idle and reused, and the progress a streamed
compactor reply reports (host-neutral; AgentScope 2.x's summariser builds the agents)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from copaw_context.core.summary.deadline import ProgressCallback

__all__ = ["AgentPool", "ProgressTally"]

T = TypeVar("T")


class AgentPool(Generic[T]):
    """Agents built by ``build`` when none is idle; only an agent whose reply finished is
    given back (a cancelled one may be mid-reply), so overlapping requests each get their own."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._idle: list[T] = []
        self.built = 0
        """How many agents this pool built (one, unless requests overlapped)."""

    def take(self) -> T:
        """An idle agent, or a new one."""
        if self._idle:
            return self._idle.pop()
        self.built += 1
        return self._build()

    def give(self, agent: T) -> None:
        """``agent`` is idle again (its reply finished)."""
        self._idle.append(agent)


class ProgressTally:
    """The characters a streamed reply has received so far, reported to ``on_progress`` at
    each chunk (the compactor's timeout measures the wait between chunks)."""

    def __init__(self, on_progress: ProgressCallback | None) -> None:
        self.on_progress = on_progress
        self.received = 0

    def add(self, delta: str | None) -> None:
        """A chunk of ``delta`` (None or "" counts as none, and still reports)."""
        self.received += len(delta or "")
        if self.on_progress is not None:
            self.on_progress(self.received)
