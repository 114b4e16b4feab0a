"""``copaw-context store export | import | migrate`` on a real PostgreSQL (issue 20): a file
workspace written by the package's own file code (the archive, a daily log, MEMORY.md and a
backup, a saved tool result, a cut request, the recall index, locks) is migrated into the
database and exported into an empty folder: every workspace file comes back byte for byte,
and nothing else (no index, lock or backup). A replica then follows the old notice from the
database. An import that clashes writes nothing; an export over a different file needs
``--force``; a link out of the folder is refused; a second import changes nothing and a file
grown since is continued."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path

import pytest

from copaw_context.cli import main
from copaw_context.core.archive.store import DialogArchive
from copaw_context.core.config.running import RunningConfig, parse_running_config
from copaw_context.core.context.step_context import StepContext
from copaw_context.core.memory import MemoryFiles
from copaw_context.core.store.postgres import PostgresStore
from copaw_context.core.store.select import STORE_ENV
from copaw_context.core.toolresults.offload_cut import offload_and_cut, offload_parts
from copaw_context.core.toolresults.truncation import parse_truncation_notice
from copaw_context.core.tools.read_tool import ReadFileTool
from tests.pg_server import pg_dsn

__all__ = ["pg_dsn"]

_LAYOUT_FILES = ("dialog/", "memory/2", "tool_result/", "MEMORY.md", "memory/.consolidated")


def _layout(folder: Path) -> dict[str, bytes]:
    """The workspace files a store holds (not the index, locks, backups or copies' positions)."""
    found = {}
    for path in folder.rglob("*"):
        key = path.relative_to(folder).as_posix()
        hidden = any(part.startswith(".") for part in key.split("/")[:-1]) or key.endswith(".lock")
        if path.is_file() and key.startswith(_LAYOUT_FILES) and not hidden:
            found[key] = path.read_bytes()
    return found


async def _read(dsn: str, agent_id: str, stream: str) -> list[bytes]:
    store = PostgresStore(dsn, agent_id)
    await store.open()
    try:
        return [entry.data for entry in await store.read(stream)]
    finally:
        await store.close()


async def _file_workspace(root: Path, agent_id: str) -> tuple[Path, str]:
    """A workspace written as files by the package; returns it and a tool result's notice."""
    root.mkdir(parents=True)
    (root / "agent.json").write_text(json.dumps({"id": agent_id, "running": {}}), encoding="utf-8")
    archive = DialogArchive(root / "dialog", session_id="s1", agent_name="bot", workspace=root)
    messages = [{"role": "user", "content": f"说明 message {i} naïve"} for i in range(5)]
    stamps = ["2026-05-01T10:00:00+00:00"] * 3 + ["2026-05-02T09:00:00+00:00"] * 2
    await archive.append(messages, stamps, [f"m-{i}" for i in range(5)])
    files = MemoryFiles(root)
    await files.append_log("- Lesson: make clean first")
    await files.append_log("- the CI cache key includes the lockfile")
    await files.edit_section("Preferences", "- answers in French")
    await files.edit_section("Preferences", "- short answers")  # a backup is kept
    ctx = StepContext(RunningConfig(), root)
    text = "".join(f"row {i} 数据\n" for i in range(3000))
    cut, _ = await offload_and_cut(ctx.store, text, 2000, root)
    await offload_parts(ctx.request_store, ["a long request " * 400], 1000, root)
    await ctx.memory.tools.index.search("French")  # builds the recall index
    (root / "memory" / ".consolidated.json").write_text('{"logs": {}, "version": 1}\n')
    return root, cut


def test_migrate_then_export_gives_every_file_back_byte_for_byte(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    agent_id = f"agent-{uuid.uuid4().hex}"
    source, cut = asyncio.run(_file_workspace(tmp_path / "files", agent_id))
    original = _layout(source)
    assert {k.split("/")[0] for k in original} == {"dialog", "memory", "tool_result", "MEMORY.md"}
    assert any(k.startswith("dialog/requests/") for k in original)

    assert main(["store", "migrate", "--dsn", pg_dsn, str(source)]) == 0
    out = capsys.readouterr().out
    assert f"Imported and verified {len(original)} item(s)" in out
    assert main(["store", "import", "--dsn", pg_dsn, str(source)]) == 0  # again: nothing new
    assert "Imported 0 item(s)" in capsys.readouterr().out

    target = tmp_path / "exported"
    assert main(["store", "export", "--dsn", pg_dsn, "--agent-id", agent_id, str(target)]) == 0
    assert _layout(target) == original
    assert not (target / "memory" / ".index.sqlite3").exists()
    assert not (target / "memory" / "backups").exists()

    # A replica with an empty folder follows the old notice from the database.
    replica = tmp_path / "replica"
    replica.mkdir()
    (replica / "agent.json").write_text(
        json.dumps({"id": agent_id, "running": {}}), encoding="utf-8"
    )
    config = parse_running_config({"running": {"light_context_config": {"store": {"dsn": pg_dsn}}}})
    parsed = parse_truncation_notice(cut)
    assert parsed is not None and parsed[1].file_path is not None
    key = Path(parsed[1].file_path).relative_to(source).as_posix()
    tool = ReadFileTool.from_config(config, replica)
    for named in (key, parsed[1].file_path):  # the old notice named the old folder's file
        result, _ = asyncio.run(tool.read(named, 1, 2))
        assert result.ok and result.text.startswith("row 0 数据\nrow 1 数据"), result.text


def test_clashes_write_nothing_and_links_out_are_refused(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    agent_id = f"agent-{uuid.uuid4().hex}"
    source, _ = asyncio.run(_file_workspace(tmp_path / "files", agent_id))
    assert main(["store", "import", "--dsn", pg_dsn, str(source)]) == 0
    capsys.readouterr()

    # The same workspace changed in the middle of a day file and of MEMORY.md: refused.
    day = source / "dialog" / "2026-05-01.jsonl"
    day.write_bytes(day.read_bytes().replace(b"message 1", b"message X"))
    (source / "MEMORY.md").write_text("## Other\n- changed\n", encoding="utf-8")
    grown = source / "dialog" / "2026-05-02.jsonl"
    before = grown.read_bytes()
    grown.write_bytes(before + before.splitlines(keepends=True)[-1].replace(b"m-4", b"m-9"))
    assert main(["store", "import", "--dsn", pg_dsn, str(source)]) == 1
    err = capsys.readouterr().err
    assert "2 item(s)" in err and "dialog/2026-05-01.jsonl" in err and "MEMORY.md" in err
    assert "nothing was written" in err
    assert len(asyncio.run(_read(pg_dsn, agent_id, "dialog/2026-05-02.jsonl"))) == 2

    target = tmp_path / "exported"
    target.mkdir()
    (target / "MEMORY.md").write_text("mine\n", encoding="utf-8")
    args = ["store", "export", "--dsn", pg_dsn, "--agent-id", agent_id, str(target)]
    assert main(args) == 1
    assert "differ from the database: MEMORY.md" in capsys.readouterr().err
    assert (target / "MEMORY.md").read_text(encoding="utf-8") == "mine\n"
    assert not (target / "dialog").exists()
    assert main([*args, "--force"]) == 0
    assert (target / "MEMORY.md").read_bytes() != b"mine\n"

    hostile = tmp_path / "hostile"
    (hostile / "dialog").mkdir(parents=True)
    (tmp_path / "secret.jsonl").write_text('{"secret": 1}\n', encoding="utf-8")
    os.symlink(tmp_path / "secret.jsonl", hostile / "dialog" / "2026-05-01.jsonl")
    capsys.readouterr()
    assert main(["store", "import", "--dsn", pg_dsn, "--agent-id", "x-hostile", str(hostile)]) == 1
    assert "outside" in capsys.readouterr().err


def test_without_a_database_the_command_says_how_to_give_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    assert main(["store", "export", str(tmp_path)]) == 2
    assert "give --dsn, or set COPAW_CONTEXT_STORE" in capsys.readouterr().err
    assert main(["store", "import", "--dsn", "mysql://x@y/z", str(tmp_path)]) == 2
    assert "must be a PostgreSQL URL" in capsys.readouterr().err
