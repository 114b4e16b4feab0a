"""Holding a lease of a :class:`~copaw_context.core.store.protocol.WorkspaceStore` for a
block: waited for, renewed while held, released after (both stores; the consolidation's one
run at a time). A lease lost while its block runs (a renewal finds it taken over, as after
a database restart, or no renewal reaches the store for the lease's whole time) stops the
block: it is cancelled and :class:`LeaseLostError` raised, so two holders do not go on
together."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

from copaw_context.core.store.files import FileStore
from copaw_context.core.store.protocol import Lease, StoreError, WorkspaceStore

__all__ = [
    "FILE_LEASE_SECONDS",
    "LeaseHeldError",
    "LeaseLostError",
    "hold_lease",
    "hold_lock_file",
]

FILE_LEASE_SECONDS = 60.0
"""A lock file's lease time, renewed every third while held (a dead holder's lock ends at
once: the operating system releases it)."""

logger = logging.getLogger("copaw_context")


class LeaseHeldError(StoreError):
    """Another holder kept the lease for longer than the wait allowed; nothing was done."""

    def __init__(self, name: str, wait_seconds: float, what: str = "") -> None:
        super().__init__(
            f"another holder has kept {what or f'the {name} lease'} for over "
            f"{wait_seconds:g} s; nothing was done, the next run tries again"
        )
        self.name = name
        self.wait_seconds = wait_seconds


class LeaseLostError(StoreError):
    """The lease was lost while its block ran (``why``); the block was stopped there."""

    def __init__(self, name: str, why: str, what: str = "") -> None:
        super().__init__(
            f"{what or f'the {name} lease'} was lost while held ({why}); the block was stopped"
        )
        self.name = name
        self.why = why


@contextlib.asynccontextmanager
async def hold_lease(
    store: WorkspaceStore,
    name: str,
    wait_seconds: float,
    ttl_seconds: float,
    *,
    poll_seconds: float = 0.5,
    what: str = "",
) -> AsyncIterator[Lease]:
    """Hold lease ``name`` for the ``async with`` block: wait up to ``wait_seconds`` for
    another holder (then :class:`LeaseHeldError`), renew it every third of ``ttl_seconds``,
    release it at the end (a release that fails leaves it to expire). Lost meanwhile (a
    renewal finds it another's, or none reached the store for ``ttl_seconds``), the block
    is cancelled and :class:`LeaseLostError` raised."""
    if not ttl_seconds > 0:  # NaN too: a renewal every third of it would spin
        raise StoreError(f"a lease's time must be more than 0 s, got {ttl_seconds!r}")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    while True:
        asked = loop.time()  # the lease's time runs from before the take at the latest
        if (lease := await _acquire(store, name, ttl_seconds)) is not None:
            break
        if loop.time() >= deadline:
            raise LeaseHeldError(name, wait_seconds, what)
        await asyncio.sleep(poll_seconds)
    block = asyncio.current_task()
    cancels = block.cancelling() if block is not None else 0
    lost: list[str] = []

    def stop(why: str) -> None:  # called by the renewal while the block waits on something
        if not lost and block is not None:
            lost.append(why)
            block.cancel()

    held = [lease]
    renewing = asyncio.ensure_future(_renew(store, held, ttl_seconds, asked + ttl_seconds, stop))
    try:
        yield lease
    except asyncio.CancelledError:
        if lost and block is not None and block.uncancel() <= cancels:  # ours alone
            raise LeaseLostError(name, lost[0], what) from None
        raise
    except BaseException:
        if lost and block is not None:
            block.uncancel()  # the block caught our cancellation and raised its own error
        raise
    else:
        if lost and block is not None:  # the block caught our cancellation and went on
            block.uncancel()
            raise LeaseLostError(name, lost[0], what)
    finally:
        renewing.cancel()
        await _to_the_end(_stop(renewing, store, held))


async def _acquire(store: WorkspaceStore, name: str, ttl: float) -> Lease | None:
    """One try at the lease; cancelled meanwhile, the try is let finish and what it took
    released before the cancellation goes on (its write may already be on its way)."""
    trying = asyncio.ensure_future(store.acquire_lease(name, ttl))
    try:
        return await asyncio.shield(trying)
    except asyncio.CancelledError:
        if not trying.cancelled():
            await _to_the_end(_release_taken(store, trying))
        raise


async def _release_taken(store: WorkspaceStore, trying: asyncio.Future[Lease | None]) -> None:
    await asyncio.wait([trying])
    if not trying.cancelled() and trying.exception() is None and (taken := trying.result()):
        await _release(store, taken)


async def _stop(renewing: asyncio.Future[None], store: WorkspaceStore, held: list[Lease]) -> None:
    """Wait for the renewal to end (no renewal after the release), then release."""
    await asyncio.wait([renewing])
    if not renewing.cancelled() and renewing.exception() is not None:
        logger.warning(
            "copaw-context: renewing the %s lease stopped: %s", held[0].name, renewing.exception()
        )
    await _release(store, held[0])


async def _release(store: WorkspaceStore, lease: Lease) -> None:
    try:
        await store.release_lease(lease)
    except Exception as error:  # it expires on its own
        logger.warning("copaw-context: releasing the %s lease failed: %s", lease.name, error)


async def _to_the_end(step: Coroutine[Any, Any, None]) -> None:
    """Run ``step`` to its end even when the caller is cancelled meanwhile (the lease is
    never left held by a cancelled holder); that cancellation is raised after it."""
    task = asyncio.ensure_future(step)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError as error:
            cancelled = error
    task.result()
    if cancelled is not None:
        raise cancelled


@contextlib.asynccontextmanager
async def hold_lock_file(
    lock: Path, workspace: Path, wait_seconds: float, lock_timeout: float
) -> AsyncIterator[None]:
    """Hold the lock file ``lock`` (inside ``workspace``) as the file store's lease of that
    name, waiting up to ``wait_seconds`` (then :class:`LeaseHeldError` naming the file); a
    lock outside the workspace, or reached through a link leading out, is a
    :class:`StoreError` and nothing is written."""
    if lock.suffix != ".lock" or not lock.parent.is_relative_to(workspace):
        raise StoreError(
            f"the lock file {lock} must be a <name>.lock inside the workspace {workspace}"
        )
    folder = lock.parent.relative_to(workspace).as_posix()
    store = FileStore(workspace, locks_dir=folder, lock_timeout=lock_timeout)
    try:
        async with hold_lease(
            store, lock.stem, wait_seconds, FILE_LEASE_SECONDS, poll_seconds=0.05, what=str(lock)
        ):
            yield
    finally:
        await store.close()


async def _renew(
    store: WorkspaceStore,
    held: list[Lease],
    ttl: float,
    valid_until: float,
    lose: Callable[[str], None],
) -> None:
    """Renew ``held[0]`` every third of its time until cancelled; lost (a renewal finds it
    gone, or none succeeded before ``valid_until``, the loop's time it is sure to last
    until), ``lose`` is called with why, logged."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(ttl / 3)
        asked = loop.time()
        try:
            renewed = await store.renew_lease(held[0], ttl)
        except Exception as error:  # the store is down: try again at the next third
            logger.warning("copaw-context: renewing the %s lease failed: %s", held[0].name, error)
            if loop.time() >= valid_until:
                why = f"no renewal reached the store for {ttl:g} s: {error}"
                logger.warning("copaw-context: the %s lease was lost: %s", held[0].name, why)
                lose(why)
                return
            continue
        if renewed is None:
            logger.warning("copaw-context: the %s lease expired while held", held[0].name)
            lose("it expired or another holder took it over")
            return
        held[0] = renewed
        valid_until = asked + ttl
