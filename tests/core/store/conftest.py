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
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from copaw_context.core.store.files import FileStore
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.protocol import WorkspaceStore

KINDS = ("files", "postgres")


class Clock:
    """Wall time plus an offset the test moves: the file store's blob stamps are the files'
    modification times, so both stores' clocks start at now."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


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


def make_store(kind: str, dsn: str, folder: Path, clock: Callable[[], float]) -> WorkspaceStore:
    """A store of ``kind``: files in ``folder``, or a fresh workspace id in the database."""
    if kind == "files":
        folder.mkdir(parents=True, exist_ok=True)
        return FileStore(folder, "agent-files", clock=clock)
    return PostgresStore(dsn, f"agent-{uuid.uuid4().hex}", clock=clock, max_connections=4)


async def opened(store: WorkspaceStore) -> WorkspaceStore:
    if isinstance(store, PostgresStore):
        await store.open()
    return store


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=KINDS)
async def store(
    request: pytest.FixtureRequest, pg_dsn: str, tmp_path: Path, clock: Clock
) -> AsyncIterator[WorkspaceStore]:
    """Each contract test runs once on the file store and once on PostgreSQL."""
    made = await opened(make_store(request.param, pg_dsn, tmp_path / "ws", clock))
    try:
        yield made
    finally:
        await made.close()
