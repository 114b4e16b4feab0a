"""The store contract suite's fixtures: a real PostgreSQL for the whole session, and each
test's store of either kind.

The server is pgserver's (a PostgreSQL 16 that pip installs, started in a temp folder, even
as root): never a mock, never skipped. If it cannot start, every test that needs it fails
with the reason.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from copaw_context.core.store.protocol import WorkspaceStore
from copaw_context.testing import ManualClock
from tests.core.store.kit import KINDS, make_store, opened
from tests.pg_server import pg_dsn

__all__ = ["clock", "pg_dsn", "store"]


@pytest.fixture
def clock() -> ManualClock[float]:
    """The stores' clock: now, moved by the test."""
    return ManualClock(time.time())


@pytest.fixture(params=KINDS)
async def store(
    request: pytest.FixtureRequest, pg_dsn: str, tmp_path: Path, clock: ManualClock[float]
) -> AsyncIterator[WorkspaceStore]:
    """Each contract test runs once on the file store and once on PostgreSQL."""
    made = await opened(make_store(request.param, pg_dsn, tmp_path / "ws", clock))
    try:
        yield made
    finally:
        await made.close()
