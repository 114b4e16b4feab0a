"""Hostile ``/load_history`` files, through real agents of both majors (issue 17).

A conversation is dumped, then loaded back in many hostile forms: a huge summary, malformed
JSON, wrong types, a 100 MB line, binary, a symlink out of the workspace, a FIFO, a
directory, non-UTF-8, duplicated ids, a result without its call, a call without its result,
a system message in the middle, the assistant first, an empty text, an unknown role. Each
refusal names the message or line and leaves the context as it was; what is loaded reaches
the model within the window at every later call.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tests.reliability.agent_session import agent_config
from tests.reliability.budget import record
from tests.reliability.drivers import HostDriver
from tests.reliability.invariants import StepFigures, check_model_input

WINDOW = 8000
_TURNS_AFTER_LOAD = 8
_CALLS = ("tool_use", "tool_call")
_RESULTS = ("tool_result",)


def _blank(message: dict[str, Any]) -> dict[str, Any]:
    blank = copy.deepcopy(message)
    content = blank.get("content")
    if isinstance(content, str):
        blank["content"] = ""
    elif isinstance(content, list):
        blank["content"] = [
            {**b, "text": ""} if isinstance(b, dict) and "text" in b else b for b in content
        ]
    return blank


def _without(messages: list[dict[str, Any]], kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """``messages`` without their blocks of ``kinds`` (a message left with none dropped)."""
    kept = []
    for message in copy.deepcopy(messages):
        content = message.get("content")
        if isinstance(content, list):
            blocks = [b for b in content if not (isinstance(b, dict) and b.get("type") in kinds)]
            if not blocks:
                continue
            message["content"] = blocks
        kept.append(message)
    return kept


def _hostile(workspace: Path, outside: Path, dump: dict[str, Any]) -> dict[str, str]:
    """File name -> how it is made (written in ``workspace``); all must be refused."""
    messages: list[dict[str, Any]] = dump["messages"]
    text = json.dumps
    first_user = messages[0]
    system = {**copy.deepcopy(first_user), "id": "sys-mid", "role": "system"}
    robot = {**copy.deepcopy(first_user), "id": "robot-1", "role": "robot"}
    files: dict[str, bytes] = {
        "malformed.json": b'{"messages": [\n {"id": "x",\n  "role" "user"}\n]}',
        "wrong-types.json": text({"messages": "all of them"}).encode(),
        "wrong-summary.json": text({**dump, "summary": 7}).encode(),
        "wrong-item.json": text({**dump, "messages": [3, *messages]}).encode(),
        "binary.json": bytes(range(256)) * 64,
        "latin1.json": text({**dump, "summary": "café"}, ensure_ascii=False).encode("latin-1"),
        "duplicated.json": text({**dump, "messages": [*messages, messages[-1]]}).encode(),
        "orphan.json": text({**dump, "messages": _without(messages, _CALLS)}).encode(),
        "unanswered.json": text({**dump, "messages": _without(messages, _RESULTS)}).encode(),
        "system-middle.json": text(
            {**dump, "summary": "", "messages": [messages[0], system, *messages[1:]]}
        ).encode(),
        "assistant-first.json": text({**dump, "summary": "", "messages": messages[1:]}).encode(),
        "empty-text.json": text({**dump, "messages": [*messages, _blank(first_user)]}).encode(),
        "robot.json": text({**dump, "messages": [*messages, robot]}).encode(),
    }
    for name, content in files.items():
        (workspace / name).write_bytes(content)
    with open(workspace / "huge-line.json", "wb") as handle:  # one 100 MB line
        handle.write(b'{"messages": [], "summary": "')
        handle.truncate(100 * 1024 * 1024)
    (outside / "secret.json").write_text(text(dump))
    (workspace / "link-out.json").symlink_to(outside / "secret.json")
    os.mkfifo(workspace / "fifo.json")
    (workspace / "folder.json").mkdir()
    return {
        name: name
        for name in [*files, "huge-line.json", "link-out.json", "fifo.json", "folder.json"]
    }


async def _run(driver: HostDriver, base: Path) -> dict[str, Any]:
    workspace, outside = base / "ws", base / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "notes.txt").write_text("".join(f"note {i}\n" for i in range(40)))
    figures = StepFigures()
    replies = 0

    async def answer(call: Any) -> list[Any]:
        check_model_input(
            await driver.provider_inputs(call), driver.tool_schemas(call), WINDOW, figures
        )
        return driver.text_step("done")

    read = driver.tool_step([("read_file", {"file_path": "notes.txt"}, None)])
    steps: list[Any] = [read, answer, *[answer] * (_TURNS_AFTER_LOAD + 4)]
    hook = driver.hook(agent_config(WINDOW, "extractive"), workspace)
    agent = await driver.agent(hook, driver.model(steps, context_size=WINDOW))
    assert await driver.ask(agent, "read the notes") == "done"
    replies += 1
    dumped = await driver.ask(agent, "/dump_history good.json")
    assert "History dumped" in dumped, dumped
    dump = json.loads((workspace / "good.json").read_text(encoding="utf-8"))
    refused = named = changed = 0
    hostile = _hostile(workspace, outside, dump)
    for name in hostile:
        before = driver.context_keys(agent)
        reply = await asyncio.wait_for(driver.ask(agent, f"/load_history {name}"), 120)
        assert reply.startswith("**Not loaded.**"), (name, reply)
        refused += 1
        where = "message " in reply or "line " in reply or name in reply
        named += where
        changed += driver.context_keys(agent) != before
    huge = "## Goal\n- Keep the parser fast\n## Decisions\n" + "".join(
        f"- decision {n}: the cache holds entry {n} for the tokenizer run\n" for n in range(8_000)
    )
    (workspace / "huge-summary.json").write_text(json.dumps({**dump, "summary": huge}))
    loaded = await driver.ask(agent, "/load_history huge-summary.json")
    assert loaded.startswith("**History loaded.**"), loaded
    for turn in range(_TURNS_AFTER_LOAD):
        assert await driver.ask(agent, f"next step {turn}") == "done"
        replies += 1
    return {
        "files": len(hostile) + 1,
        "summary_chars": len(huge),
        "refused": refused,
        "refusals_naming_where": named,
        "context_changed_on_refusal": changed,
        "replies": replies,
        "model_calls": figures.model_calls,
        "over_window": figures.over_window,
        "invalid_inputs": figures.invalid_inputs,
        "max_input_ratio": round(figures.max_input_ratio, 3),
    }


def test_hostile_history_files_are_refused_or_bounded(driver: HostDriver) -> None:
    with tempfile.TemporaryDirectory() as name:
        figures = asyncio.run(_run(driver, Path(name)))
    record("hostile /load_history files", driver=driver.name, **figures)
    assert figures["refused"] == figures["files"] - 1
    assert figures["refusals_naming_where"] == figures["refused"]
    assert figures["context_changed_on_refusal"] == 0
    assert figures["over_window"] == 0 and figures["invalid_inputs"] == 0
