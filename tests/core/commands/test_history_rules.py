"""/load_history refuses what providers reject and bounds a loaded summary (issue 17, 6/10)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from copaw_context.core.commands import history
from copaw_context.core.engine import ContextEngine
from copaw_context.core.summary.budget import summary_budget_chars
from tests.core.commands.history_kit import history_config
from tests.fake_host import FakeHost, user


def _msg(mid: str, role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": mid, "role": role, "name": role, "content": list(parts)}


def _text(value: str) -> dict[str, Any]:
    return {"kind": "text", "text": value}


HI = _msg("m1", "user", _text("hi"))
ANSWER = _msg("m2", "assistant", _text("hello"))


def _refused() -> list[tuple[str, list[dict[str, Any]], str]]:
    return [
        ("assistant first", [ANSWER, HI], "message 1 (assistant"),
        ("empty user text", [HI, ANSWER, _msg("m3", "user", _text("  "))], "message 3 (user"),
        ("no content", [HI, _msg("m3", "assistant")], "message 2 (assistant"),
        ("system in middle", [HI, _msg("m3", "system", _text("be terse")), ANSWER], "message 2 ("),
    ]


async def test_load_history_refuses_inputs_providers_reject(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    host = FakeHost([user("keep me")])
    host.summary = "kept"
    before = [m.msg_id for m in host.messages]
    for number, (why, messages, where) in enumerate(_refused()):
        (tmp_path / f"h{number}.json").write_text(json.dumps({"messages": messages}))
        reply = await engine.run_command(host, "load_history", f"h{number}.json")
        assert reply.startswith("**Not loaded.**") and where in reply, (why, reply)
        assert reply.endswith("The context is unchanged.")
        assert [m.msg_id for m in host.messages] == before and host.summary == "kept"
    ok = [_msg("s", "system", _text("rules")), HI, ANSWER]
    (tmp_path / "ok.json").write_text(json.dumps({"messages": ok}))
    assert (await engine.run_command(host, "load_history", "ok.json")).startswith(
        "**History loaded.**"
    )


async def test_a_json_error_names_its_line(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    (tmp_path / "bad.json").write_text('{"messages": [\n{"id": "m1",\n "role" "user"}]}')
    reply = await engine.run_command(FakeHost([user("x")]), "load_history", "bad.json")
    assert "line 3" in reply and reply.endswith("The context is unchanged."), reply


async def test_a_fifo_or_a_directory_is_refused_without_hanging(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "folder.json").mkdir()
    host = FakeHost([user("x")])
    for name, why in (("pipe.json", "not a regular file"), ("folder.json", "directory")):
        reply = await asyncio.wait_for(engine.run_command(host, "load_history", name), 30)
        assert reply.startswith("**Not loaded.**") and why in reply, reply


async def test_a_loaded_summary_is_bounded_like_a_compactors(tmp_path: Path) -> None:
    engine = ContextEngine(history_config(), tmp_path)
    host = FakeHost([user("x")])
    huge = "## Goal\n- Fix the parser\n## Decisions\n" + "".join(
        f"- decision {n}: keep the tokenizer at version {n}\n" for n in range(12_000)
    )
    (tmp_path / "big.json").write_text(json.dumps({"messages": [HI, ANSWER], "summary": huge}))
    reply = await engine.run_command(host, "load_history", "big.json")
    assert reply.startswith("**History loaded.**") and "shortened from" in reply, reply
    report = await engine.report(host)
    budget = summary_budget_chars(report.window, report.factor)
    assert len(engine.context.state(host).summary or "") <= budget
    assert "Fix the parser" in host.summary
    assert report.total <= report.window


async def test_a_long_summary_message_with_a_short_bare_summary_is_bounded(
    tmp_path: Path,
) -> None:
    """The message reaches the model, not the bare text: a 5-character bare summary does
    not let a 2 * budget + 4000 character CJK message through."""
    engine = ContextEngine(history_config(), tmp_path)
    host = FakeHost([user("x")])
    report = await engine.report(host)
    budget = summary_budget_chars(report.window, report.factor)
    data = {
        "messages": [HI, ANSWER],
        "summary": "中" * (2 * budget + 4000),
        "bare_summary": "short",
    }
    (tmp_path / "cjk.json").write_text(json.dumps(data, ensure_ascii=False))
    reply = await engine.run_command(host, "load_history", "cjk.json")
    assert reply.startswith("**History loaded.**"), reply
    assert "中" * 100 not in host.summary, "the long message must not reach the model"
    report = await engine.report(host)
    assert report.total <= report.window


async def test_the_last_resort_cut_shortens_the_summary(tmp_path: Path) -> None:
    """A summary larger than the window, nothing else to cut: the summary is shortened."""
    engine = ContextEngine(history_config(), tmp_path)
    host = FakeHost([user("what next?")], window=4000)
    bare = "## Goal\n- Ship the parser\n## Decisions\n" + "".join(
        f"- decision {n}: keep the cache warm for run {n}\n" for n in range(3000)
    )
    host.summary = bare
    engine.context.state(host).summary = bare
    assert (await engine.report(host)).total > 4000
    await engine.before_reasoning(host)
    report = await engine.report(host)
    assert report.total <= report.window, report
    assert "Ship the parser" in host.summary


async def test_dumps_never_follow_a_link_out_of_the_workspace(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    workspace.mkdir()
    (workspace / "out").symlink_to(outside, target_is_directory=True)
    (workspace / "dialog").mkdir()
    (workspace / "dialog" / "dumps").symlink_to(outside, target_is_directory=True)
    engine = ContextEngine(history_config(), workspace)
    host = FakeHost([user("x")])
    for argument in ("out/h.json", ""):
        reply = await engine.run_command(host, "dump_history", argument)
        assert reply.startswith("**Not dumped.**") and "outside the workspace" in reply, reply
    assert not list(outside.iterdir()), "nothing was written outside"


async def test_a_folder_swapped_for_a_link_out_while_dumping_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    (workspace / "notes").mkdir(parents=True)
    engine = ContextEngine(history_config(), workspace)
    real_open_dir = history.open_dir

    def swapping(*args: Any, **kwargs: Any) -> Any:  # the race, made certain
        (workspace / "notes").rename(workspace / "notes-old")
        (workspace / "notes").symlink_to(outside, target_is_directory=True)
        return real_open_dir(*args, **kwargs)

    monkeypatch.setattr(history, "open_dir", swapping)
    reply = await engine.run_command(FakeHost([user("x")]), "dump_history", "notes/h.json")
    assert reply.startswith("**Not dumped.**") and "outside the workspace" in reply, reply
    assert not list(outside.iterdir()), "nothing was left outside"
