"""A real PostgreSQL for a test session (``copaw_context.testing.postgres``): the store
contract suite's and the replica tests' server. Never a mock, never skipped: if it cannot
start, every test that needs it fails with the reason."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from copaw_context.testing.postgres import postgres_server

__all__ = ["pg_dsn"]


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The DSN of a real PostgreSQL started for this session (pgserver, a temp folder)."""
    with contextlib.ExitStack() as running:
        try:
            dsn = running.enter_context(postgres_server())
        except RuntimeError as error:
            pytest.fail(f"the store suites need a real PostgreSQL: {error}", pytrace=False)
        yield dsn
