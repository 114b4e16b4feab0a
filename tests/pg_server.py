"""A real PostgreSQL for a test session (pgserver's PostgreSQL 16, started in a temp folder,
even as root): the store contract suite's and the replica tests' server. Never a mock,
never skipped: if it cannot start, every test that needs it fails with the reason."""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["pg_dsn"]


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
