"""A gate on the background group commit's syncs (``tests/core/conftest.py``'s ``sync_gate``)."""

from __future__ import annotations

import os
import threading

import pytest

from copaw_context.core.workspace import durable

__all__ = ["SyncGate"]


class SyncGate:
    """Holds every file sync until opened; records the order of syncs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.open = threading.Event()
        self.entered = threading.Event()  # a sync is waiting at the gate
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        monkeypatch.setattr(durable, "_sync_data", self.sync_data)
        monkeypatch.setattr(durable, "_sync_folder", self.sync_folder)
        self._monkeypatch = monkeypatch

    def note(self, kind: str, what: str = "") -> None:
        """Record an event of the code under test among the syncs."""
        with self._lock:
            self.events.append((kind, what))

    def open_at_barrier(self) -> None:
        """Open the gate when a barrier starts waiting (noted as ``barrier``): code that
        waits sees the syncs first; code that does not runs on with them still held."""
        commit = durable._COMMIT
        real = commit.flush

        def flush() -> None:
            self.note("barrier")
            self.open.set()
            real()

        self._monkeypatch.setattr(commit, "flush", flush)

    def before(self, first: tuple[str, str], then: str) -> bool:
        """Whether ``first`` was recorded, and before any event of kind ``then``."""
        with self._lock:
            events = list(self.events)
        if first not in events:
            return False
        later = [i for i, (kind, _) in enumerate(events) if kind == then]
        return all(events.index(first) < i for i in later)

    def sync_data(self, fd: int) -> None:
        self.entered.set()
        assert self.open.wait(30), "the gate was never opened"
        with self._lock:
            self.events.append(("file", os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))))

    def sync_folder(self, fd: int) -> None:
        with self._lock:
            self.events.append(("folder", os.readlink(f"/proc/self/fd/{fd}")))
