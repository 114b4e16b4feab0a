"""The PostgreSQL store tried as a new user following docs/deployment.md and the README's
``copaw-context store`` / ``memory`` rows (issue 20): each test is a defect found that way."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest

from copaw_context.cli import main
from copaw_context.core.errors import redact
from copaw_context.core.store.select import STORE_ENV
from tests.pg_server import pg_dsn
from tests.store_replicas import replica

__all__ = ["pg_dsn"]


def test_a_workspace_whose_agent_json_holds_only_its_id_is_imported_and_searched(
    pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_id = f"user-{uuid.uuid4().hex}"
    folder = replica(tmp_path / "a", agent_id)
    assert main(["store", "import", "--dsn", pg_dsn, str(folder)]) == 0
    assert repr(agent_id) in capsys.readouterr().out
    assert main(["memory", "search", "anything", "--workspace", str(folder)]) == 0


def test_a_config_that_does_not_exist_is_an_error_not_the_defaults(
    pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = replica(tmp_path / "a", f"user-{uuid.uuid4().hex}")
    missing = tmp_path / "missing.json"
    assert main(["store", "import", "--dsn", pg_dsn, "--config", str(missing), str(folder)]) == 2
    assert str(missing) in capsys.readouterr().err


def test_exporting_an_id_the_database_does_not_hold_says_so(
    pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    args = ["store", "export", "--dsn", pg_dsn, "--agent-id", "no-such-agent-typo", str(target)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "holds nothing for workspace 'no-such-agent-typo'" in err and "--agent-id" in err
    assert not target.exists()


def test_a_connection_error_names_the_setting_the_url_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(STORE_ENV, "postgresql://agent:s3cret@127.0.0.1:1/copaw")
    folder = replica(tmp_path / "a", "user-env")
    assert main(["store", "import", str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"set by the environment variable {STORE_ENV}" in err and "--dsn" not in err
    assert "s3cret" not in err


def test_without_a_database_every_way_to_give_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    assert main(["store", "import", str(replica(tmp_path / "a", "user-none"))]) == 2
    err = capsys.readouterr().err
    assert "--dsn" in err and STORE_ENV in err and "running.light_context_config.store.dsn" in err


def test_a_role_that_cannot_create_the_tables_gets_the_reason_and_the_fix(
    pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    role = f"copaw_user_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {role} LOGIN")
        connection.execute(f"REVOKE CREATE ON SCHEMA public FROM {role}")
    dsn = pg_dsn.replace("postgresql://postgres:", f"postgresql://{role}:", 1)
    assert dsn != pg_dsn
    folder = replica(tmp_path / "a", "user-role")
    assert main(["store", "import", "--dsn", dsn, str(folder)]) == 1  # no traceback
    err = capsys.readouterr().err
    assert "cannot create or migrate its tables" in err and "permission denied" in err
    assert "GRANT CREATE ON SCHEMA" in err and "Traceback" not in err


def test_a_key_value_dsn_is_refused_without_showing_its_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = replica(tmp_path / "a", "user-kv")
    dsn = "host=db.internal user=agent password=hunter2 dbname=copaw"
    assert main(["store", "import", "--dsn", dsn, str(folder)]) == 2
    err = capsys.readouterr().err
    assert "must be a PostgreSQL URL" in err and "hunter2" not in err
    assert "hunter2" not in redact("postgresql://db/copaw?user=a&password=hunter2&x=1")
