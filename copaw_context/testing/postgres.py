"""A real PostgreSQL for tests and benchmarks: pgserver's PostgreSQL 16 in a temporary folder
(even as root), never a mock. pgserver is a dev dependency (``scripts/bootstrap.sh``)."""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["postgres_server"]


@contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL started in a new temporary folder: its DSN; stopped and removed after.
    Raises ``RuntimeError`` (with the reason) when it cannot start."""
    # A short folder: the server's Unix socket path must stay under 108 bytes.
    folder = Path(tempfile.mkdtemp(prefix="copaw-pg-"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR here
            import pgserver

            server = pgserver.get_server(folder / "data", cleanup_mode="stop")  # type: ignore[attr-defined]
    except Exception as error:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(
            f"pgserver could not start a PostgreSQL in {folder}: {type(error).__name__}: "
            f"{error} (scripts/bootstrap.sh installs pgserver with the dev extras)"
        ) from error
    try:
        yield server.get_uri()
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
