"""Which store a workspace gets, and what a wrong setting says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from copaw_context.cli._all_settings import setting_rows
from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.errors import ConfigError
from copaw_context.core.store.files import FileStore
from copaw_context.core.store.lines import redact
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.postgres_schema import SCHEMA_VERSION
from copaw_context.core.store.protocol import StoreError
from copaw_context.core.store.select import CONFIG_KEY, STORE_ENV, open_store, store_dsn

UNREACHABLE = "postgresql://postgres:secret@127.0.0.1:1/nothing"


def config(dsn: str | None = None) -> RunningConfig:
    light = {"store": {"dsn": dsn}} if dsn is not None else {}
    return parse_running_config({"running": {"light_context_config": light}}, "agent.json")


async def test_no_dsn_is_the_file_store(tmp_path: Path) -> None:
    store = await open_store(config(), tmp_path, "a1", environ={})
    assert isinstance(store, FileStore)
    assert (store.workspace_id, store.workspace) == ("a1", tmp_path)
    assert store_dsn(config(), {STORE_ENV: "  "}) == (None, CONFIG_KEY)


async def test_the_setting_or_the_environment_selects_postgresql(
    tmp_path: Path, pg_dsn: str
) -> None:
    store = await open_store(config(pg_dsn), tmp_path, "agent-a1", environ={})
    try:
        assert isinstance(store, PostgresStore) and store.workspace_id == "agent-a1"
    finally:
        await store.close()
    # The environment wins over agent.json (here an unreachable one).
    store = await open_store(config(UNREACHABLE), tmp_path / "ws", environ={STORE_ENV: pg_dsn})
    try:
        assert isinstance(store, PostgresStore) and store.workspace_id == "ws"
    finally:
        await store.close()


def test_a_dsn_of_another_kind_names_its_setting() -> None:
    with pytest.raises(ConfigError, match=r"light_context_config\.store\.dsn.*postgresql://"):
        config("mysql://root@db/x")
    with pytest.raises(ConfigError, match=STORE_ENV):
        store_dsn(config(), {STORE_ENV: "sqlite:///x.db"})


async def test_an_unreachable_database_names_the_setting_not_the_password(
    tmp_path: Path,
) -> None:
    with pytest.raises(StoreError) as failure:
        await open_store(config(UNREACHABLE), tmp_path, environ={})
    assert CONFIG_KEY in str(failure.value)
    assert "secret" not in str(failure.value) and "***" in str(failure.value)
    with pytest.raises(StoreError, match=STORE_ENV):
        await open_store(config(), tmp_path, environ={STORE_ENV: UNREACHABLE})
    assert redact("postgresql://u:p@h/db") == "postgresql://u:***@h/db"


async def test_a_missing_driver_says_which_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "copaw_context.core.store.postgres", None)
    with pytest.raises(StoreError, match=r"copaw-context\[postgres\]"):
        await open_store(config("postgresql://u@h/db"), tmp_path, environ={})


def test_the_package_imports_without_psycopg() -> None:
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = sys.modules['psycopg_pool'] = None\n"
        "import copaw_context, copaw_context.core.store.select\n"
        "import copaw_context.core.store.files\n"
        "assert 'psycopg' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


async def test_the_schema_is_migrated_once_and_a_newer_one_refused(pg_dsn: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS copaw_schema_test")
        await admin.execute("CREATE DATABASE copaw_schema_test")
    dsn = make_conninfo(pg_dsn, dbname="copaw_schema_test")
    for _ in range(2):  # a second replica opening finds the schema in place
        store = PostgresStore(dsn, "a1")
        await store.open()
        await store.close()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        cursor = await connection.execute("SELECT version FROM copaw_schema")
        assert await cursor.fetchall() == [(SCHEMA_VERSION,)]
        await connection.execute("UPDATE copaw_schema SET version = 99")
    with pytest.raises(StoreError, match="newer than this package"):
        await PostgresStore(dsn, "a1").open()


async def test_a_store_used_before_it_is_open_says_so(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn, "a1")
    with pytest.raises(StoreError, match="not open"):
        await store.read("dialog/2026-05-01.jsonl")
    await store.close()  # closing a store never opened is fine


def test_check_config_shows_the_dsn_without_its_password() -> None:
    rows = dict((path, value) for path, value, _ in setting_rows(config(UNREACHABLE)))
    shown = rows["light_context_config.store.dsn"]
    assert "secret" not in shown and shown == '"postgresql://postgres:***@127.0.0.1:1/nothing"'
