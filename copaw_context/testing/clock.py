"""A manual clock: the one clock double, for anything that takes ``clock=`` (and ``sleep=``).

:class:`ManualClock` is a callable returning the current time, which moves only when a test
says so (``advance``, or setting ``now``) or when code awaits its ``sleep``. The time is a float
of seconds (``OffloadStore``, the compactor's deadlines) or a ``datetime`` (``MemoryFiles``,
``MemoryScheduler``): whatever ``start`` is (``0.0`` by default); ``advance(seconds)`` adds
seconds to either.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Generic, TypeVar, cast, overload

__all__ = ["ManualClock"]

TimeT = TypeVar("TimeT", float, datetime)


class ManualClock(Generic[TimeT]):
    """``clock()`` is ``clock.now``; ``advance(seconds)`` moves it, ``await clock.sleep(s)``
    records ``s`` in ``sleeps``, advances and yields once (no real waiting)."""

    @overload
    def __init__(self: ManualClock[float], start: float = 0.0) -> None: ...
    @overload
    def __init__(self: ManualClock[datetime], start: datetime) -> None: ...
    def __init__(self, start: float | datetime = 0.0) -> None:
        self.now: TimeT = cast(TimeT, start)
        self.sleeps: list[float] = []

    def __call__(self) -> TimeT:
        return self.now

    def advance(self, seconds: float) -> TimeT:
        """Move the time ``seconds`` on (back when negative); returns the new time."""
        if isinstance(self.now, datetime):
            self.now = self.now + timedelta(seconds=seconds)
        else:
            self.now = self.now + seconds
        return self.now

    async def sleep(self, seconds: float) -> None:
        """An ``asyncio.sleep`` that advances this clock instead of waiting."""
        self.sleeps.append(seconds)
        self.advance(seconds)
        await asyncio.sleep(0)

    def __repr__(self) -> str:
        return f"ManualClock({self.now!r})"
