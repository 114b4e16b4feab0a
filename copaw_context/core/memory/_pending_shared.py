"""The unfinished memory summaries in a shared workspace store (issue 20), so that a replica
that never comes back (its folder gone with its container) loses none.

Only with a shared store (a PostgreSQL DSN); the local ``<memory_dir>/.pending/`` files
(:mod:`._pending`) stay as they are, and stay the fallback when the store is down. Through
the :class:`~copaw_context.core.store.protocol.WorkspaceStore` protocol alone:

- the summary's input is the document ``<memory_dir>/.pending/<id>.json`` (the local file's
  bytes; ``<id>`` is the local file's name without ``.json``), emptied once it is done;
- the stream ``<memory_dir>/.pending.jsonl`` lists them: ``open/<id>`` when saved,
  ``done/<id>`` when written (keyed records: exactly once each, a replay adds nothing). Its
  lines are small, so every start reads it whole;
- the lease ``pending-<id>`` (:attr:`SharedPending.lease_seconds`, renewed while held) is
  held by whoever runs the summary, from before ``open`` until after ``done``: the replica
  that saved it, or one that found it open at its start. A replica that finds the lease
  held waits for it (a dead holder's lease ends within its time) and then, the record being
  ``done``, does nothing: two replicas never both run one summary.

Should that still happen (a lease lost while held: a database restart lets another replica
take it at once, and the holder's summary is stopped only at its next renewal, with
:class:`~copaw_context.core.store.leases.LeaseLostError`; a ``done`` that could not be
appended, so a later start runs it again), the entries a
summary writes are deduplicated against MEMORY.md and the day's log (the summariser's
``_new_entries``), so a second run on the same day adds nothing the first wrote.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

from copaw_context.core.store.copies import StoreOpener
from copaw_context.core.store.leases import LeaseHeldError, hold_lease
from copaw_context.core.store.lines import check_key
from copaw_context.core.store.protocol import StoreError, StreamRecord, WorkspaceStore

__all__ = ["PENDING_STREAM", "Claim", "SharedPending"]

logger = logging.getLogger("copaw_context")

PENDING_STREAM = ".pending.jsonl"
"""The name of the stream (in the memory folder) listing the summaries saved and done."""

Claim = Literal["run", "done", "held"]
"""What :meth:`SharedPending.claim` found: run the summary, another ran it, another runs it."""

_NAME = re.compile(r"[0-9]{8}T[0-9]{6}-[0-9a-f]{12}")


class SharedPending:
    """The unfinished summaries of one memory folder in its workspace's shared store."""

    lease_seconds: float = 30.0
    """How long a summary's lease lasts unless renewed (every third of it while it runs):
    how long another replica waits for a holder that hangs (on PostgreSQL a dead holder's
    lease is freed at once, with its connection)."""

    def __init__(self, opener: StoreOpener, memory_dir: Path, workspace: Path) -> None:
        self.opener = opener
        self.folder = check_key(memory_dir.relative_to(workspace).as_posix(), "folder")
        self.stream = f"{self.folder}/{PENDING_STREAM}"
        self._versions: dict[str, str] = {}
        """The documents' versions this process put or read (to empty them when done)."""

    @classmethod
    def of(cls, opener: StoreOpener, memory_dir: Path, workspace: Path) -> SharedPending | None:
        """The shared pending summaries of ``memory_dir``; ``None`` for a folder whose name is
        no store key (the local files then stay the only copy)."""
        try:
            return cls(opener, memory_dir, workspace)
        except (ValueError, StoreError):
            return None

    def _document(self, name: str) -> str:
        return f"{self.folder}/.pending/{name}.json"

    async def _store(self) -> WorkspaceStore:
        store = await self.opener.store()
        if store is None:
            raise StoreError("the workspace store is unavailable")
        return store

    async def open(self, name: str, data: bytes) -> bool:
        """Keep the input ``data`` of summary ``name`` in the store; False (logged) when the
        store cannot take it (the local file alone keeps it then)."""
        try:
            store = await self._store()
            key = self._document(name)
            current = await store.get_document(key)
            if current.data != data:
                current = await store.put_document(key, data, current.version)
            self._versions[name] = current.version
            note = json.dumps({"id": name, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
            await store.append([StreamRecord(self.stream, f"open/{name}", note.encode())])
        except Exception as error:
            logger.warning(
                "memory summariser: the summary's input is kept only in this replica's folder "
                "(the workspace store did not take it: %s)",
                error,
            )
            return False
        return True

    async def done(self, name: str) -> None:
        """Summary ``name`` is written: say so (once), then empty its document (logged when
        the store cannot be reached: a later start may run it again, adding nothing)."""
        try:
            store = await self._store()
            await store.append([StreamRecord(self.stream, f"done/{name}", b"{}")])
        except Exception as error:
            logger.warning(
                "memory summariser: could not record in the workspace store that summary %s is "
                "done (%s); a later start may run it again (its entries are not added twice)",
                name,
                error,
            )
            return
        key = self._document(name)
        try:
            version = self._versions.pop(name, None)
            if version is None:
                version = (await store.get_document(key)).version
            if version:
                await store.put_document(key, b"", version)
        except Exception as error:  # only space: the record says done
            logger.info("memory summariser: could not empty %s: %s", key, error)

    async def _keys(self, store: WorkspaceStore) -> tuple[list[str], set[str]]:
        """(the names saved, in order; the names done) the stream lists."""
        opened: list[str] = []
        finished: set[str] = set()
        for entry in await store.read(self.stream):
            kind, _, name = (entry.key or "").partition("/")
            if kind == "open" and _NAME.fullmatch(name):
                opened.append(name)
            elif kind == "done":
                finished.add(name)
        return opened, finished

    async def is_done(self, name: str) -> bool:
        """Whether the stream says summary ``name`` was written (False when unreadable)."""
        try:
            return name in (await self._keys(await self._store()))[1]
        except Exception as error:
            logger.warning("memory summariser: cannot read %s: %s", self.stream, error)
            return False

    async def unfinished(self) -> tuple[list[tuple[str, bytes]], set[str]] | None:
        """(the inputs saved and not done, oldest first; the names done), ``None`` (logged)
        when the store cannot be read."""
        try:
            store = await self._store()
            opened, finished = await self._keys(store)
            found: list[tuple[str, bytes]] = []
            for name in opened:
                if name in finished:
                    continue
                doc = await store.get_document(self._document(name))
                if doc.data:
                    self._versions[name] = doc.version
                    found.append((name, doc.data))
                else:
                    logger.warning(
                        "memory summariser: %s is open in %s but its input is missing; skipped",
                        name,
                        self.stream,
                    )
        except Exception as error:
            logger.warning(
                "memory summariser: cannot read the unfinished summaries of other replicas "
                "from the workspace store: %s",
                error,
            )
            return None
        return found, finished

    @contextlib.asynccontextmanager
    async def claim(self, name: str, *, fresh: bool) -> AsyncIterator[Claim]:
        """Hold summary ``name``'s lease for the block: ``"run"`` (this process runs it),
        ``"done"`` (another replica ran it) or ``"held"`` (another replica holds it for
        longer than the wait). A store that is down gives ``"run"`` (logged): the summary
        runs, its local file keeps it."""
        async with contextlib.AsyncExitStack() as held:
            claim: Claim | None = None
            try:
                store = await self._store()
                wait = 0.0 if fresh else self.lease_seconds * 1.5
                lease = hold_lease(store, f"pending-{name}", wait, self.lease_seconds)
                await held.enter_async_context(lease)
            except LeaseHeldError:
                logger.info("memory summariser: another replica runs summary %s", name)
                claim = "run" if fresh else "held"  # a name just made is no one else's
            except Exception as error:
                logger.log(
                    logging.DEBUG if fresh else logging.WARNING,  # fresh: publish() says it
                    "memory summariser: summary %s runs without its lease (the workspace store "
                    "cannot be reached: %s)",
                    name,
                    error,
                )
                claim = "run"
            if claim is None:
                claim = "done" if not fresh and await self.is_done(name) else "run"
            yield claim
