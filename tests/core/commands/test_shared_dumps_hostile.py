"""Hostile ``/load_history`` names with a shared store (issue 20): with a dump of every name
in the store, none writes outside the workspace, none writes anything but a dump into the
folder, and each is refused with a reply (never an exception)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from copaw_context.core.engine import ContextEngine
from copaw_context.core.store.postgres import PostgresStore
from tests.core.commands.dumps_kit import dump_config
from tests.fake_host import FakeHost, user
from tests.pg_server import pg_dsn
from tests.store_replicas import replica

__all__ = ["pg_dsn"]

_DUMP = json.dumps(
    {"format": "copaw-context.history/1", "form": "fake", "messages": [{"role": "user"}]}
).encode()


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


async def test_hostile_names_write_nothing_outside_and_reply(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_id = f"agent-{uuid.uuid4().hex}"
    outside = tmp_path / "outside"
    outside.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    b = replica(tmp_path / "ws" / "b", agent_id)
    (b / "out").symlink_to(outside, target_is_directory=True)
    (b / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    (b / "gone").symlink_to(tmp_path / "nowhere", target_is_directory=True)
    (b / "adir.json").mkdir()
    store = PostgresStore(pg_dsn, agent_id)
    await store.open()
    for key in [
        "x.json",
        "etc/passwd",
        "out/x.json",
        "dangling.json",
        "gone/x.json",
        "adir.json",
        "a/x.json",
    ]:
        await store.put_document(f".history-dumps/{key}", _DUMP, "")
    await store.close()
    before_outside, before_b = _tree(tmp_path / "outside"), _tree(b)
    engine = ContextEngine(dump_config(pg_dsn), b)
    names = [
        "../x.json",
        str(outside / "x.json"),
        "dialog/../../etc/passwd",
        "out/x.json",
        "dangling.json",
        "gone/x.json",
        "adir.json",
        "a" * 5000 + ".json",
        "a/" * 3000 + "x.json",
        "x\0.json",
        "a\\x.json",
        "..\\x.json",
        "~/x.json",
        "~nosuchuser-xyz/x.json",
        "~",
    ]
    try:
        for name in names:
            reply = await engine.run_command(FakeHost([user("hi")]), "load_history", name)
            assert reply.startswith("**Not loaded.**"), (name[:40], reply)
    finally:
        await engine.close()
    assert _tree(outside) == before_outside and not (tmp_path / "nowhere.json").exists()
    assert not (tmp_path / "nowhere").exists() and not (home / "x.json").exists()
    assert not (tmp_path / "ws" / "x.json").exists()
    assert [p for p in tmp_path.rglob("*") if p.is_file() and p.read_bytes() == _DUMP] == []
    assert set(before_b) <= set(_tree(b))
