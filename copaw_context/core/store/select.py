"""Which store a workspace gets: ``COPAW_CONTEXT_STORE``, else
``running.light_context_config.store.dsn``, else the files (nothing changes)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from copaw_context.core.config.running import RunningConfig
from copaw_context.core.errors import ConfigError
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.protocol import StoreError, WorkspaceStore

__all__ = ["CONFIG_KEY", "STORE_ENV", "open_store", "store_dsn"]

STORE_ENV = "COPAW_CONTEXT_STORE"
CONFIG_KEY = "running.light_context_config.store.dsn"
_SCHEMES = ("postgresql://", "postgres://")


def store_dsn(
    config: RunningConfig, environ: Mapping[str, str] | None = None
) -> tuple[str | None, str]:
    """(the DSN, the setting it comes from); ``(None, ...)`` for the file store. A DSN that
    is not a PostgreSQL URL is a :class:`ConfigError` naming that setting."""
    env = os.environ if environ is None else environ
    value = env.get(STORE_ENV, "").strip()
    if value:
        source = f"the environment variable {STORE_ENV}"
    else:
        value, source = config.settings().store_dsn or "", CONFIG_KEY
    if not value:
        return None, source
    if not value.startswith(_SCHEMES):
        raise ConfigError(
            STORE_ENV if source != CONFIG_KEY else CONFIG_KEY,
            value,
            'must be a PostgreSQL URL such as "postgresql://user@host:5432/db" '
            "(unset it for the file store)",
        )
    return value, source


async def open_store(
    config: RunningConfig,
    workspace: str | Path,
    workspace_id: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> WorkspaceStore:
    """The workspace's store, opened: a :class:`FileStore` over ``workspace`` without a DSN,
    else a connected and migrated PostgreSQL store for ``workspace_id`` (the agent id;
    default: the folder's name). Raises :class:`ConfigError` for a DSN of another kind and
    :class:`StoreError` when psycopg is missing or the database cannot be reached (both name
    the setting)."""
    dsn, source = store_dsn(config, environ)
    if dsn is None:
        return FileStore(workspace, workspace_id)
    try:
        from copaw_context.core.store.postgres import PostgresStore
    except ImportError as error:
        raise StoreError(
            f"{source} selects the PostgreSQL store, but its driver is not installed "
            f"({error}); install it with pip install 'copaw-context[postgres]'"
        ) from error
    store = PostgresStore(dsn, workspace_id or Path(workspace).name, source=source)
    await store.open()
    return store
