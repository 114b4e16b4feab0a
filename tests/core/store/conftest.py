"""The store contract suite's fixtures: a real PostgreSQL for the whole session, and each
test's store of either kind.

The server is pgserver's (a PostgreSQL 16 that pip installs, started in a temp folder, even
as root): never a mock, never skipped. If it cannot start, every test that needs it fails
with the reason.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from copaw_context.core.store.protocol import WorkspaceStore
from copaw_context.testing import ManualClock
from tests.core.store.kit import KINDS, make_store, opened


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The DSN of a real PostgreSQL started for this session (pgserver, a temp folder)."""
    # A short folder: the server's Unix socket path must stay under 108 bytes.
    folder = Path(tempfile.mkdtemp(prefix="copaw-pg-"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR here
            import pgserver

            server = pgserver.get_server(folder / "data", cleanup_mode="stop")
    except Exception as error:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(
            f"the store contract suite needs a real PostgreSQL and pgserver could not start "
            f"one in {folder}: {type(error).__name__}: {error} (scripts/bootstrap.sh installs "
            "pgserver with the dev extras)",
            pytrace=False,
        )
    try:
        yield server.get_uri()
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


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
