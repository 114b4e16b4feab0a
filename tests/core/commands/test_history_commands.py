"""QwenPaw's /history, /dump_history and /load_history, through the engine (fake host)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from copaw_context.core.archive.store import read_archive
from copaw_context.core.commands import parse_command
from copaw_context.core.config.running import parse_running_config
from copaw_context.core.engine import ContextEngine
from tests.core.commands.history_kit import history_config
from tests.fake_host import FakeHost, FakeMessage, call, result, text, user


def _context() -> list[FakeMessage]:
    return [
        user("Build the parser and tell me what fails."),
        FakeMessage("assistant", [text("Building."), call("c1", "build"), result("c1", "ok")]),
        FakeMessage("assistant", [text("The parser builds.")]),
    ]


def _archived_ids(workspace: Path) -> list[str]:
    return [
        r["message"]["id"]
        for path in sorted((workspace / "dialog").glob("*.jsonl"))
        for r in read_archive(path)
    ]


def test_the_history_commands_are_recognised() -> None:
    assert parse_command("/history") is not None
    assert parse_command("/dump_history notes/h.json") == parse_command(
        "/DUMP_HISTORY notes/h.json"
    )
    command = parse_command("/load_history  notes/h.json ")
    assert command is not None and (command.name, command.argument) == (
        "load_history",
        "notes/h.json",
    )


async def test_history_lists_each_message_with_its_tokens(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    host = FakeHost(_context())
    reply = await engine.run_command(host, "history", "")
    lines = reply.splitlines()
    assert lines[0].startswith("**Context history** (3 messages, ")
    assert lines[2].startswith("1. user (user) · ") and "Build the parser" in lines[2]
    assert " tokens · " in lines[3] and lines[3].endswith("Building.")
    ledger, _ = await engine.context.sync(host)
    assert f"· {ledger.messages[1].tokens} tokens ·" in lines[3]
    empty = await engine.run_command(FakeHost(), "history", "")
    assert "(the context is empty)" in empty


async def test_history_is_bounded_like_qwenpaws_history_max_length(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    host = FakeHost([user(f"request number {n} " + "x" * 200) for n in range(400)])
    reply = await engine.run_command(host, "history", "")
    assert len(reply) <= 10_200
    assert "more message(s); /dump_history writes them all to a file" in reply


async def test_dump_then_load_round_trips_the_context_and_summary(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    host = FakeHost(_context())
    host.summary = "## Goal\n- Fix the parser"
    engine.context.state(host).summary = "## Goal\n- Fix the parser"
    reply = await engine.run_command(host, "dump_history", "notes/h.json")
    assert reply.startswith("**History dumped.** 3 message(s)") and "notes/h.json" in reply
    dumped = json.loads((tmp_path / "notes" / "h.json").read_text(encoding="utf-8"))
    assert dumped["form"] == "fake" and len(dumped["messages"]) == 3

    original = [m.msg_id for m in host.messages]
    host.messages = [user("something else entirely")]
    host.summary = ""
    reply = await engine.run_command(host, "load_history", "notes/h.json")
    assert reply.startswith("**History loaded.** 3 message(s) from notes/h.json with its summary")
    assert "the previous 1 message(s) were archived to dialog/" in reply
    assert [m.msg_id for m in host.messages] == original
    assert host.summary == "## Goal\n- Fix the parser"
    assert engine.context.state(host).summary == "## Goal\n- Fix the parser"
    assert len(_archived_ids(tmp_path)) == 1, "the context that was replaced is archived"


async def test_dump_without_a_path_goes_to_the_dialog_folder(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    reply = await engine.run_command(FakeHost(_context()), "dump_history", "")
    (dump,) = (tmp_path / "dialog" / "dumps").glob("history-*.json")
    assert str(dump.relative_to(tmp_path)) in reply


@pytest.mark.parametrize(
    ("argument", "why"),
    [("../outside.json", "outside the workspace"), ("/etc/x.json", "outside the workspace")],
)
async def test_dumps_stay_inside_the_workspace(tmp_path: Path, argument: str, why: str) -> None:
    workspace = tmp_path / "ws"
    engine = ContextEngine(history_config(), workspace)
    reply = await engine.run_command(FakeHost(_context()), "dump_history", argument)
    assert reply.startswith("**Not dumped.**") and why in reply
    assert not (tmp_path / "outside.json").exists()


async def test_a_dump_never_overwrites_a_file(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    (tmp_path / "h.json").write_text("keep me", encoding="utf-8")
    reply = await engine.run_command(FakeHost(_context()), "dump_history", "h.json")
    assert reply.startswith("**Not dumped.**") and "already exists" in reply
    assert (tmp_path / "h.json").read_text(encoding="utf-8") == "keep me"


def _bad_files(tmp_path: Path) -> list[tuple[str, str, str]]:
    good = {"id": "m1", "role": "user", "name": "user", "content": [{"kind": "text", "text": "hi"}]}
    call_only = {
        "id": "m2",
        "role": "assistant",
        "name": "a",
        "content": [{"kind": "tool_call", "text": "x", "call_id": "c9", "tool_name": "t"}],
    }
    result_only = {
        "id": "m3",
        "role": "assistant",
        "name": "a",
        "content": [{"kind": "tool_result", "text": "x", "call_id": "c8", "output": ["x"]}],
    }
    return [
        ("missing.json", "", "does not exist"),
        ("broken.json", "{not json", "is not a JSON file"),
        ("shape.json", json.dumps({"msgs": []}), '"messages" must be a list'),
        ("item.json", json.dumps({"messages": [3]}), "message 1 is not a JSON object"),
        ("form.json", json.dumps({"form": "agentscope2.Msg", "messages": []}), "this agent loads"),
        ("bad.json", json.dumps({"messages": [good, {"role": "robot"}]}), "message 2 is not"),
        ("dup.json", json.dumps({"messages": [good, good]}), "repeats the id 'm1'"),
        ("open.json", json.dumps({"messages": [good, call_only]}), "'c9' of message 2 has no"),
        ("orphan.json", json.dumps([good, result_only]), "result for the call 'c8'"),
        ("summary.json", json.dumps({"messages": [], "summary": 7}), "must be text"),
    ]


async def test_an_invalid_file_changes_nothing(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    host = FakeHost(_context())
    host.summary = "kept summary"
    before = [m.msg_id for m in host.messages]
    for name, content, why in _bad_files(tmp_path):
        if content:
            (tmp_path / name).write_text(content, encoding="utf-8")
        reply = await engine.run_command(host, "load_history", name)
        assert reply.startswith("**Not loaded.**") and why in reply, (name, reply)
        assert reply.endswith("The context is unchanged.")
        assert [m.msg_id for m in host.messages] == before and host.summary == "kept summary"
    assert not (tmp_path / "dialog").exists(), "nothing was archived"
    missing = await engine.run_command(host, "load_history", "")
    assert "name the file" in missing


async def test_history_files_load_only_from_inside_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    engine = ContextEngine(history_config(), workspace)
    source = FakeHost(_context())
    dumped = await engine.run_command(source, "dump_history", "mine.json")
    assert dumped.startswith("**History dumped.**")
    secret = tmp_path / "secret.json"
    secret.write_bytes((workspace / "mine.json").read_bytes())
    (workspace / "link.json").symlink_to(secret)
    host = FakeHost([user("keep me")])
    for argument in (str(secret), "../secret.json", "link.json", str(tmp_path / "absent.json")):
        reply = await engine.run_command(host, "load_history", argument)
        assert reply.startswith("**Not loaded.**") and "outside the workspace" in reply, reply
        assert "does not exist" not in reply, "nothing is said about files outside"
        assert [m.msg_id for m in host.messages] == [host.messages[0].msg_id]
    loaded = await engine.run_command(host, "load_history", "mine.json")
    assert loaded.startswith("**History loaded.**")


async def test_history_files_load_from_an_extra_read_root(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    config = parse_running_config(
        {
            "running": {
                "memory": {"enabled": False},
                "light_context_config": {
                    "compactor": "extractive",
                    "extra_read_roots": [str(shared)],
                },
            }
        }
    )
    engine = ContextEngine(config, tmp_path / "ws")
    await engine.run_command(FakeHost(_context()), "dump_history", "mine.json")
    shared.mkdir()
    (tmp_path / "ws" / "mine.json").rename(shared / "mine.json")
    reply = await engine.run_command(
        FakeHost([user("x")]), "load_history", str(shared / "mine.json")
    )
    assert reply.startswith("**History loaded.**")


async def test_reused_call_ids_pair_by_occurrence_as_in_the_engine(tmp_path: Path) -> None:
    """Servers that reuse ids (``call_0`` every turn) give loadable dumps; a call made again
    while the first is unanswered does not."""
    engine = ContextEngine(history_config(), tmp_path)
    turn = [call("call_0", "build"), result("call_0", "ok")]
    again = [user("again"), FakeMessage("assistant", turn), FakeMessage("assistant", turn)]
    source = FakeHost([user("build"), FakeMessage("assistant", turn), *again[:2]])
    assert (await engine.run_command(source, "dump_history", "reused.json")).startswith(
        "**History dumped.**"
    )
    host = FakeHost([user("x")])
    reply = await engine.run_command(host, "load_history", "reused.json")
    assert reply.startswith("**History loaded.**")
    twice = FakeMessage("assistant", [call("c1", "build"), call("c1", "build")])
    bad = FakeHost([user("go"), twice, FakeMessage("assistant", [result("c1", "ok")])])
    await engine.run_command(bad, "dump_history", "twice.json")
    reply = await engine.run_command(FakeHost([user("y")]), "load_history", "twice.json")
    assert reply.startswith("**Not loaded.**") and "again" in reply, reply
