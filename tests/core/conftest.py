"""Fixtures of the host-neutral tests: ``sync_gate`` holds the background group commit's syncs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from copaw_context.core.workspace import durable
from tests.core.sync_gate import SyncGate


@pytest.fixture
def sync_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[SyncGate]:
    """Every background file sync waits until ``gate.open.set()``; opened at the end, and
    the group commit drained, so no test leaves a sync held."""
    gate = SyncGate(monkeypatch)
    yield gate
    gate.open.set()
    durable.flush()
