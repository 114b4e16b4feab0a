"""A cron schedule that runs while the process runs, e.g. the nightly memory consolidation.

:class:`MemoryScheduler` is an asyncio task that sleeps until the next time the cron expression
names (computed with ``croniter``, in local wall-clock time, so a daylight-saving change or a
suspended machine is caught up with: it never sleeps longer than ``max_sleep_seconds`` before
looking at the clock again), runs the job, and repeats. A failing job is logged and the
schedule goes on. Tests inject ``clock`` and ``sleep`` and never wait for real time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from croniter import croniter

from copaw_context.core.config.memory import DEFAULT_CONSOLIDATION_CRON
from copaw_context.core.memory.consolidate import MemoryConsolidator

__all__ = ["MemoryScheduler"]

logger = logging.getLogger("copaw_context")


def _local_now() -> datetime:
    return datetime.now()  # naive local wall-clock time: cron times are wall-clock times


class MemoryScheduler:
    """Runs ``job`` at each time of ``cron`` between :meth:`start` and :meth:`stop`."""

    def __init__(
        self,
        job: Callable[[], Awaitable[object]],
        cron: str = DEFAULT_CONSOLIDATION_CRON,
        *,
        clock: Callable[[], datetime] = _local_now,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        max_sleep_seconds: float = 300.0,
        name: str = "memory consolidation",
    ) -> None:
        if not isinstance(cron, str) or not croniter.is_valid(cron):
            raise ValueError(
                f'{name}: cron must be a cron expression such as "0 0 * * *", got {cron!r}'
            )
        if max_sleep_seconds <= 0:
            raise ValueError(f"max_sleep_seconds must be > 0, got {max_sleep_seconds!r}")
        self._job = job
        self._cron = cron
        self._clock = clock
        self._sleep = sleep
        self._max_sleep = max_sleep_seconds
        self._name = name
        self._task: asyncio.Task[None] | None = None
        self.runs = 0
        """How many times the job has run (failed runs included)."""
        self.failures = 0
        """How many runs raised."""

    @classmethod
    def for_consolidation(
        cls,
        consolidator: MemoryConsolidator,
        cron: str = DEFAULT_CONSOLIDATION_CRON,
        *,
        clock: Callable[[], datetime] = _local_now,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> MemoryScheduler:
        """A schedule running ``consolidator.consolidate`` (which reports its own outcome)."""
        return cls(consolidator.consolidate, cron, clock=clock, sleep=sleep)

    @property
    def cron(self) -> str:
        """The cron expression."""
        return self._cron

    @property
    def running(self) -> bool:
        """Whether the schedule's task is alive."""
        return self._task is not None and not self._task.done()

    def next_run(self, after: datetime | None = None) -> datetime:
        """The first time of the schedule strictly after ``after`` (default: the clock's now)."""
        start = after if after is not None else self._clock()
        return croniter(self._cron, start).get_next(datetime)

    def start(self) -> None:
        """Start the schedule in the running event loop (again after :meth:`stop`); idempotent."""
        if self.running:
            return
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=self._name)

    async def stop(self) -> None:
        """Stop the schedule; a job that is running is cancelled."""
        task, self._task = self._task, None
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)  # re-raises only our own cancel

    async def _loop(self) -> None:
        due = self.next_run()
        while True:
            logger.info("%s: next run at %s", self._name, due.isoformat(timespec="seconds"))
            while (remaining := (due - self._clock()).total_seconds()) > 0:
                await self._sleep(min(remaining, self._max_sleep))
            await self._run_job()
            # From the later of now and the slot just run: a fast job never runs twice for it.
            now = self._clock()
            due = self.next_run(now if now > due else due)

    async def _run_job(self) -> None:
        self.runs += 1
        try:
            await self._job()
        except asyncio.CancelledError:
            raise
        except Exception:
            self.failures += 1
            logger.exception("%s: the scheduled run failed; the schedule goes on", self._name)
