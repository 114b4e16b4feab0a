"""``copaw-context chat`` keeps going: a model error is one line, unknown commands are
answered locally, and a path that starts with ``/`` still reaches the model."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import httpx
import openai

from copaw_context.cli.chat import run_chat
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ScriptedChatModel, text_step

_CONFIG = parse_running_config({"running": {"memory": {"enabled": False}}})


async def _chat(tmp_path: Path, lines: list[str], model: ScriptedChatModel) -> str:
    stdin, stdout = io.StringIO("".join(f"{line}\n" for line in lines)), io.StringIO()
    status = await run_chat(
        _CONFIG,
        str(tmp_path),
        model_name="gpt-4o",
        base_url="http://127.0.0.1:9/v1",
        stdin=stdin,
        stdout=stdout,
        model=model,
    )
    assert status == 0
    return stdout.getvalue()


async def test_a_model_error_is_one_line_and_the_chat_goes_on(tmp_path: Path) -> None:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    model = ScriptedChatModel([openai.APIConnectionError(request=request), text_step("fine")])
    host_logger = logging.getLogger("as")
    level = host_logger.level
    warned: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = warned.append  # type: ignore[method-assign]
    host_logger.addHandler(handler)
    try:
        out = await _chat(tmp_path, ["hello", "hello again", "/context", "/exit"], model)
    finally:
        host_logger.removeHandler(handler)
    assert [r.getMessage() for r in warned if r.levelno < logging.ERROR] == []
    assert host_logger.level == level  # restored
    errors = [line for line in out.splitlines() if "error:" in line]
    assert len(errors) == 1, out
    assert "could not reach http://127.0.0.1:9/v1; check --base-url" in errors[0]
    assert "APIConnectionError" in errors[0] and "the chat goes on" in errors[0]
    assert "assistant> fine" in out and "**Context usage**" in out
    assert len(model.calls) == 2
    model.assert_complete()


async def test_unknown_commands_are_answered_locally_and_paths_reach_the_model(
    tmp_path: Path,
) -> None:
    model = ScriptedChatModel([text_step("about hosts"), text_step("about tmp")])
    lines = ["/foo", "/compat keep the numbers", "/help", "/exit now"]
    lines += ["/etc/hosts is empty", "/tmp is full"]
    out = await _chat(tmp_path, [*lines, "/exit"], model)
    assert "unknown command /foo Known: /compact [note], /context" in out
    assert "unknown command /compat; did you mean /compact?" in out
    assert "commands: /compact [note]" in out
    assert "/exit takes no argument; type /exit alone to quit." in out
    assert "assistant> about hosts" in out and "assistant> about tmp" in out
    users = [
        [m.get_text_content() for m in call.messages if m.role == "user"] for call in model.calls
    ]
    assert users[0][-1] == "/etc/hosts is empty" and users[1][-1] == "/tmp is full"
    assert not any("foo" in (text or "") or "compat" in (text or "") for text in users[1])
    model.assert_complete()


async def test_history_previews_the_reply_not_agentscopes_runtime_hint(tmp_path: Path) -> None:
    """The chat's agent keeps AgentScope 2.x's runtime-state injection on: its hint block
    sits in the context before the reply; /history shows the reply's text."""
    replies = ["the parser builds", "two tests fail"]
    model = ScriptedChatModel([text_step(reply) for reply in replies])
    out = await _chat(tmp_path, ["build it", "run the tests", "/history", "/exit"], model)
    rows = [line for line in out.split("**Context history**", 1)[1].splitlines()]
    previews = [row.rsplit(" · ", 1)[1] for row in rows if " assistant (" in row]
    assert replies[0] in previews and replies[1] in previews, out
    assert not any("system-reminder" in preview for preview in previews), out
    model.assert_complete()
