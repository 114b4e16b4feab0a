"""The memory summariser's background jobs: scheduled, kept on disk until done, closed within
a time limit, resumed at the next start.

A job saves its input first (:class:`~._pending.PendingSummaries`) and removes it once the
summary is written, so a job that does not finish (``close()`` stopped it at
``memory.close_timeout_seconds``, or the loop ended without ``close()``) runs again when the
summariser is next bound to a model. A job interrupted without ``close()`` logs a WARNING
(visible by default, unlike a ResourceWarning).

With a shared workspace store the job also keeps its input there and holds the summary's
lease while it runs (:mod:`._pending_shared`); at the start the summaries other replicas left
open are run too, each by one replica (the one that takes its lease); a job whose lease is
lost while it runs is stopped (logged, its input kept). Without one, nothing of that
happens: the same files as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from copaw_context.core.events import CompactionRecord
from copaw_context.core.memory._pending import Kept, PendingSummaries
from copaw_context.core.memory.events import MemoryEvent
from copaw_context.core.store.leases import LeaseLostError

__all__ = ["SummaryJobs"]

logger = logging.getLogger("copaw_context")

Run = Callable[[CompactionRecord], Awaitable[MemoryEvent | None]]

# The saved inputs a job of this process is working on: not resumed a second time (another
# hook on the same workspace, or a compaction saved while the resume reads the folder).
_LIVE: set[Path] = set()


class SummaryJobs:
    """The running summaries of one summariser."""

    def __init__(self, run: Run, store: PendingSummaries | None) -> None:
        self._run = run
        self._store = store
        self._tasks: set[asyncio.Task[MemoryEvent | None]] = set()
        self._closing = False
        self._resumed = False
        self._loader: asyncio.Task[None] | None = None  # reads what to resume

    @property
    def pending(self) -> int:
        return len(self._tasks)

    def schedule(self, record: CompactionRecord, kept: Kept | None = None) -> bool:
        """Start a job for ``record`` (``kept``: its input was saved by an earlier process);
        False when no event loop runs."""
        try:
            task = asyncio.get_running_loop().create_task(self._job(record, kept))
        except RuntimeError:
            return False
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    def resume(self) -> None:
        """Run the summaries an earlier process left unfinished (once; in the background)."""
        if self._resumed or self._store is None:
            return
        try:
            task = asyncio.get_running_loop().create_task(self._resume(self._store))
        except RuntimeError:
            return  # no loop yet: the next bind tries again
        self._resumed = True
        self._loader = task

    async def _resume(self, store: PendingSummaries) -> None:
        saved = await store.load()
        if saved:
            logger.info(
                "memory summariser: %d summaries left unfinished earlier; running them", len(saved)
            )
        for kept in saved:
            if store.folder / f"{kept.name}.json" not in _LIVE:
                self.schedule(kept.record, kept)

    async def _job(self, record: CompactionRecord, kept: Kept | None) -> MemoryEvent | None:
        store = self._store
        if store is None:
            return await self._run(record)
        fresh = kept is None
        saved: Path | None
        if kept is None:
            saved = store.new_path()  # named first: a cancel during the write still keeps it
            name = saved.stem
        else:
            saved, name = kept.path, kept.name
        shared = kept is not None and kept.in_store  # the workspace store holds it
        live = store.folder / f"{name}.json"
        _LIVE.add(live)
        try:
            if fresh and saved is not None and not await store.save(record, saved):
                saved = None
            elif saved is not None and not await asyncio.to_thread(saved.exists):
                return None  # another hook on this workspace ran it
            async with store.claim(name, fresh=fresh) as claim:
                if claim == "done":  # another replica ran it
                    await store.remove(saved)
                if claim != "run":  # done, or another replica runs it now
                    return None
                if not shared:
                    shared = await store.publish(name, record)
                event = await self._run(record)
                if _done(event):
                    await store.remove(saved, name)
                return event
        except LeaseLostError as error:  # another replica took it over: it runs it
            logger.warning(
                "memory summariser: summary %s was stopped: %s; its input stays for the next "
                "start (its entries are not added twice)",
                name,
                error,
            )
            return None
        except asyncio.CancelledError:
            if not self._closing:
                if saved:
                    tail = f"its input is kept in {saved} and runs at the next start"
                elif shared:
                    tail = "its input is kept in the workspace store and runs at the next start"
                else:
                    tail = "it is lost"
                logger.warning(
                    "copaw-context: a memory summary was interrupted because the hook was not "
                    "closed (use `async with hook:` or `await hook.close()` before the event "
                    "loop ends); %s",
                    tail,
                )
            raise
        finally:
            _LIVE.discard(live)

    async def drain(self) -> None:
        """Wait until every job has finished."""
        if self._loader is not None:
            await asyncio.gather(self._loader, return_exceptions=True)
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self, wait_seconds: float | None, *, cancel: bool = False) -> int:
        """Wait for the jobs, at most ``wait_seconds`` in all (None: no limit); stop the
        rest (their inputs stay saved for the next start). Returns how many were stopped."""
        self._closing = True
        try:
            if cancel:
                for task in list(self._tasks):
                    task.cancel()
            loop = asyncio.get_running_loop()
            deadline = None if wait_seconds is None else loop.time() + wait_seconds
            loader = self._loader
            if loader is not None and not loader.done():
                await asyncio.wait({loader}, timeout=wait_seconds)
                loader.cancel()  # still reading at the limit: the files stay for next time
                await asyncio.gather(loader, return_exceptions=True)
            while self._tasks:
                remaining = None if deadline is None else deadline - loop.time()
                if remaining is not None and remaining <= 0:
                    break
                await asyncio.wait(list(self._tasks), timeout=remaining)
            left = list(self._tasks)
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)
        finally:
            self._closing = False
        if left and not cancel:
            where = f"kept in {self._store.folder}" if self._store else "not kept"
            if self._store is not None and self._store.shared is not None:
                where += " and in the workspace store"
            one = len(left) == 1
            logger.warning(
                "copaw-context: close() stopped %d memory summar%s still running after %g s "
                "(running.memory.close_timeout_seconds; the model is slow or down); %s %s and "
                "run%s at the next start",
                len(left),
                "y" if one else "ies",
                wait_seconds,
                "its input is" if one else "their inputs are",
                where,
                "s" if one else "",
            )
        return len(left)


def _done(event: MemoryEvent | None) -> bool:
    """Whether the job's input may be forgotten (its entries written, or nothing to keep)."""
    return event is not None and event.kind != "memory_summary_failed"
