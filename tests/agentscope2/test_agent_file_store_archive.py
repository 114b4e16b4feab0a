"""Without a DSN the dialog archive reaches its day files through the workspace store too
(issue 20): a real AgentScope 2.x agent whose engine's file store counts its calls. A
``/compact`` across two days meets a folder where the second day's file should be: the
store's ``append`` rolls the first day back and the archive's own error (its text) defers
the messages to the session state; once the file can be written the next reply flushes them
through ``append``, each line once, the bytes those a standalone archive (no workspace, no
store) writes, and the same records again add nothing. The summary message of a later
compaction cites each day file with the line count it really has: listed and counted through
the store too (``line_counts``, never a whole-stream read), the counts a standalone archive's
listing gives."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from agentscope.message import Msg, UserMsg

from copaw_context import ContextEvent, MemoryCompactionHook
from copaw_context.core.archive.store import ArchivedFile, DialogArchive, read_archive
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.store.select import STORE_ENV
from copaw_context.testing import CountingStore, ScriptedChatModel, text_step
from tests.agent_history import seeded_history
from tests.helpers import make_agent

_DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")
_ARCHIVED_AT = re.compile(rb'"archived_at": "[^"]*"')


def _config() -> Any:
    light = {"token_counter": "o200k_base", "compactor": "extractive"}
    return parse_running_config({"running": {"light_context_config": light}})


def _on_days(history: list[Msg], *days: str) -> list[Msg]:
    """``history`` stamped on ``days``, an equal share on each, in order."""
    share = -(-len(history) // len(days))
    return [
        m.model_copy(update={"created_at": f"{days[i // share]}T10:{i:02d}:00.000000"})
        for i, m in enumerate(history)
    ]


def _lines(folder: Path) -> dict[str, list[bytes]]:
    files = sorted(folder.glob("*.jsonl"))
    return {path.name: path.read_bytes().splitlines(keepends=True) for path in files}


async def _append_again(archive: DialogArchive, day_file: Path) -> list[ArchivedFile]:
    """Append the records of ``day_file`` (as the archive step passes them) to ``archive``."""
    records = list(read_archive(day_file))
    return await archive.append(
        [r["message"] for r in records],
        [r["timestamp"] for r in records],
        [r["archive_id"] for r in records],
        forms=[r["form"] for r in records],
        part_keys=[r["parts"] for r in records],
    )


async def _old_code(folder: Path, day_file: Path) -> list[bytes]:
    """The lines a standalone archive writes for the records of ``day_file``."""
    (first, *_) = read_archive(day_file)
    old = DialogArchive(folder, session_id=first["session_id"], agent_name=first["agent_name"])
    assert old.files is None  # no workspace: no store
    await _append_again(old, day_file)
    return (folder / day_file.name).read_bytes().splitlines(keepends=True)


async def test_the_default_archive_goes_through_the_workspace_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    ws = tmp_path / "ws"
    dialog = ws / "dialog"
    blocker = dialog / f"{_DAYS[1]}.jsonl"
    blocker.mkdir(parents=True)  # a folder where the second day's file goes
    events: list[ContextEvent] = []
    async with MemoryCompactionHook(_config(), ws, on_event=events.append) as hook:
        ctx = hook.engine.context
        assert ctx.blobs is None and ctx.mirror is None  # no DSN: no shared store
        store = CountingStore(ws)
        ctx.workspace_store = store
        model = ScriptedChatModel([text_step("ok")] * 4, context_size=200_000)
        agent = await make_agent(hook, model)
        agent.state.context = _on_days(seeded_history(8), *_DAYS[:2])

        await agent.reply(UserMsg("user", "/compact"))
        (deferred,) = [e for e in events if e.kind == "archive_deferred"]
        assert f"cannot append to archive file {blocker}: " in deferred.message
        assert "nothing was written; rolled back 1 other file(s)" in deferred.message
        assert store.calls["append"] == 1  # the archive step's one way to the files
        assert (dialog / f"{_DAYS[0]}.jsonl").read_bytes() == b""  # rolled back

        blocker.rmdir()
        ctx.scratch(await hook.session(agent)).pending_tried = None  # the minute is up
        await agent.reply(UserMsg("user", "Anything else?"))  # the flush step writes them
        assert [e.kind for e in events].count("archive_flushed") == 1
        assert store.calls["append"] == 2
        written = _lines(dialog)
        assert sorted(written) == [f"{day}.jsonl" for day in _DAYS[:2]]
        assert all(written.values())

        # The bytes the file code writes (the time each was archived aside).
        for name, lines in written.items():
            old = await _old_code(tmp_path / "old" / "dialog", dialog / name)
            assert [_ARCHIVED_AT.sub(b"", x) for x in lines] == [
                _ARCHIVED_AT.sub(b"", x) for x in old
            ]

        # The same records again (a retry): through the store, and nothing written twice.
        (record, *_) = read_archive(dialog / f"{_DAYS[1]}.jsonl")
        again = DialogArchive(
            dialog,
            session_id=record["session_id"],
            agent_name=record["agent_name"],
            workspace=ws,
            files=store,
        )
        for name in written:
            assert await _append_again(again, dialog / name) == []
        assert store.calls["append"] == 2 + len(written)
        assert _lines(dialog) == written
        # A new one: the file and its line count after, as the summary cites them.
        late = UserMsg("user", "one more").model_dump(mode="json")
        day2 = dialog / f"{_DAYS[1]}.jsonl"
        [counted] = await again.append([late], [f"{_DAYS[1]}T23:00:00"], ["late-1"])
        assert (counted.path, counted.lines) == (day2, len(written[day2.name]) + 1)
        written = _lines(dialog)

        # A later compaction: its summary cites each day file with its real line count.
        later = _on_days(seeded_history(6), _DAYS[2])
        agent.state.context = [*agent.state.context, *later]
        listed_before = store.calls["line_counts"]
        await agent.reply(UserMsg("user", "/compact"))
        assert store.calls["append"] == 4 + len(written)
        # The guide's listing and counts went through the store, never reading whole streams.
        assert store.calls["line_counts"] > listed_before
        assert set(store.keys["line_counts"]) == {"dialog/"}
        assert store.calls["read"] == store.calls["stream_lengths"] == 0
        summary = str(agent.state.summary)
        files = _lines(dialog)
        assert f"{_DAYS[2]}.jsonl" in files
        for name, lines in files.items():  # the replies since, on today's date, too
            assert f"dialog/{name} ({len(lines)} lines)" in summary
        # The counts cited are those the file code (a standalone archive's listing) gives.
        alone = DialogArchive(dialog, session_id="other", agent_name="Friday")
        assert alone.files is None
        assert [(f.path.name, f.lines) for f in await alone.list_files()] == [
            (name, len(lines)) for name, lines in files.items()
        ]
        assert await again.list_files() == await alone.list_files()
        for name, lines in written.items():  # appended after, never rewritten
            assert files[name][: len(lines)] == lines
